// reconcile(): the controller's decisions as a PURE function of what it observed — the PPUJob,
// the objects it owns, the latest scraped job metrics and the time — to a list of actions.
// Level-triggered: running it again on the same state asks for the same (idempotent) actions,
// so a crashed or restarted operator simply continues. See docs/OPERATOR.md for the phases.
// The decision is made by one policy per concern (restart, completion/TTL, suspend, deadline,
// export: policy_*.cpp over the shared pass of reconcile_pass.h); reconciler.cpp orders them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kube/resource_kind.h"
#include "reconcile/actions.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"

namespace ppu::op {

struct ReconcileOptions {
  double restart_backoff_s = 10;                // first gang restart waits this long; doubles each time
  double restart_backoff_max_s = 300;           // cap of the exponential back-off
  bool network_policy = true;                   // own a NetworkPolicy per job (build_network_policy)
  bool kueue = false;                           // Kueue integration on (--kueue): queued jobs get a Workload
  std::vector<std::string> metrics_namespaces;  // may scrape the ranks' metrics port
  // --force-delete-on-lost-node: a live job's rank pod stuck terminating on a NotReady,
  // unreachable or deleted node is force-deleted (reconcile/node_health.h); Observed::nodes holds
  // the nodes. Off: such a pod is waited for, as every terminating pod is.
  bool force_delete_on_lost_node = true;
};

// The API server refused to create one of the job's objects (403 PodSecurity/webhook/quota,
// 422 invalid, ...) in the previous pass. The executor reports it, the controller remembers it
// until a pass creates everything it wanted, and reconcile() turns it into the PodCreationFailed
// condition, status.reason/message and one Warning event per distinct refusal.
struct CreationRefusal {
  ResourceKind kind;  // of the refused object
  std::string name;
  long code = 0;        // HTTP status
  std::string reason;   // QuotaExceeded | PodSecurity | AdmissionWebhook | Forbidden | Invalid | <Status.reason>
  std::string message;  // the server's message
};

inline constexpr const char* kRefusedCondition = condition::kPodCreationFailed;

// What the scraper saw on the job's ranks (absent fields were not exported).
struct ScrapedProgress {
  std::optional<int64_t> outer_round;
  std::optional<double> eval_perplexity;
  std::optional<int64_t> checkpoint_round;
  // recovery live: the smallest ppu_live_ranks and ppu_min_slice_coverage over the ranks.
  std::optional<int64_t> live_ranks;
  std::optional<double> min_slice_coverage;
  // The smallest ppu_step, the largest ppu_steps_target and ppu_remaining_seconds (the slowest rank).
  std::optional<int64_t> step;
  std::optional<int64_t> steps_target;
  std::optional<double> remaining_seconds;
  // The job's stops of the whole job, the rounds they lost, and its last stop (reached, resumed from).
  std::optional<int64_t> stops{}, rounds_lost{}, last_stop_round{}, last_stop_resumed_round{};
};
// Field by field (every field of the struct): a scrape that changed nothing brings no pass.
inline auto fields_of(const ScrapedProgress& p) {
  return std::tie(p.outer_round, p.eval_perplexity, p.checkpoint_round, p.live_ranks, p.min_slice_coverage, p.step,
                  p.steps_target, p.remaining_seconds, p.stops, p.rounds_lost, p.last_stop_round,
                  p.last_stop_resumed_round);
}
inline bool operator==(const ScrapedProgress& a, const ScrapedProgress& b) { return fields_of(a) == fields_of(b); }
inline bool operator!=(const ScrapedProgress& a, const ScrapedProgress& b) { return !(a == b); }

struct Observed {
  json job;                     // the PPUJob (with metadata.resourceVersion)
  std::vector<json> pods;       // pods labelled ppu.dev/job=<name> and owned by the job, but the store's
  std::optional<json> service;  // <job>
  // The rendezvous store (rendezvous.h): its pod (label ppu.dev/role=rendezvous, whatever the
  // job's recovery: a gang job deletes a leftover one) and its Service <job>-rendezvous.
  std::optional<json> rendezvous_pod;
  std::optional<json> rendezvous_service;
  std::optional<json> config_map;      // <job>-config
  std::optional<json> network_policy;  // <job>
  // spec.export (export_job.h): the batch/v1 Job <job>-export, the pods it made (label
  // ppu.dev/export=<job>, owned by that Job) and the NetworkPolicy <job>.export.
  std::optional<json> export_job;
  std::vector<json> export_pods;
  std::optional<json> export_network_policy;
  // Kueue (options.kueue): the job's Workload ppujob-<job>, and the value of the
  // WorkloadPriorityClass its kueue.x-k8s.io/priority-class label names (absent: no such class).
  std::optional<json> workload;
  std::optional<int64_t> priority_value;
  // options.force_delete_on_lost_node: the Node objects (their Ready condition) of the nodes the
  // job's terminating pods are bound to (spec.nodeName), by name; a name absent here has no Node.
  std::map<std::string, json> nodes;
  std::optional<ScrapedProgress> progress;
  std::optional<CreationRefusal> refusal;
  int64_t now = 0;  // Unix seconds
  ReconcileOptions options;
};

Decision reconcile(const Observed& in);

// Back-off before gang restart number `restart_count` (1-based): base * 2^(n-1), capped.
double restart_backoff(int restart_count, const ReconcileOptions& o);

}  // namespace ppu::op
