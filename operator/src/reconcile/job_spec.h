// JobSpec: a PPUJob's spec read into plain values, with the CRD's defaults applied again (the
// operator must behave the same on objects created before a default existed). Also the names
// every object of a job gets: <job> (Service, NetworkPolicy), <job>-config (ConfigMap), <job>-rank-<k> (pods),
// for spec.export <job>-export (batch/v1 Job) and <job>.export (its NetworkPolicy), and with
// training.network.recovery live <job>-rendezvous (the store's pod and Service, rendezvous.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/job_contract.h"

namespace ppu::op {

using json = nlohmann::json;

inline constexpr const char* kJobLabel = "ppu.dev/job";
inline constexpr const char* kRankLabel = "ppu.dev/rank";
inline constexpr const char* kConfigKey = "config.yaml";
inline constexpr const char* kConfigPath = "/etc/ppu/config.yaml";
inline constexpr const char* kCheckpointPath = "/checkpoints";
// On the export Job's pod, instead of ppu.dev/job (which would make it one of the job's rank
// pods to the Service and the job's NetworkPolicy): the PPUJob's name.
inline constexpr const char* kExportLabel = "ppu.dev/export";

struct RunPolicy {
  int backoff_limit = 3;
  // recovery live (recovery_pacing.h): single ranks recreated within recovery_window_seconds (0:
  // the job's lifetime) before the next loss fails the job; a rank lost again within the window
  // waits recovery_backoff_seconds, doubled each further loss, at most recovery_backoff_max_seconds.
  int max_recoveries = 10;
  int64_t recovery_window_seconds = 3600;
  int64_t recovery_backoff_seconds = 10;
  int64_t recovery_backoff_max_seconds = 300;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> ttl_seconds_after_finished;
  std::string clean_pod_policy = "Running";  // All | Running | None
  bool suspend = false;
};

// spec.export: the model ppu-export writes onto the checkpoint volume once the job Succeeded.
struct ExportSpec {
  std::string format = "hf";   // hf | ppu
  std::string dtype = "fp32";  // fp32 | bf16
  std::string path = "model";  // directory relative to the checkpoint volume's root
  int64_t active_deadline_seconds = 3600;
  json resources;  // spec.export.resources; null: the ranks' cpu and memory (export_job.h)
};

// spec.training.network.recovery: what a lost rank costs (docs/OPERATOR.md, "Live recovery").
// Gang: every rank stops and the gang restarts; Live: the other ranks go on and only the lost
// rank's pod is recreated, against a rendezvous store that lives outside the ranks.
enum class Recovery { Gang, Live };

// Kueue's labels on a job (docs/OPERATOR.md, "Queueing with Kueue").
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";

struct JobSpec {
  std::string ns, name, uid;
  int64_t generation = 0;
  int replicas = 1;
  std::string image;
  int master_port = contract::kRendezvousPort;
  int metrics_port = 9100;
  Recovery recovery = Recovery::Gang;
  RunPolicy run_policy;
  std::optional<ExportSpec> model_export;  // nullopt: spec.export absent, nothing is exported
  // Kueue: the labels kueue.x-k8s.io/queue-name (a LocalQueue of the job's namespace) and
  // kueue.x-k8s.io/priority-class (a WorkloadPriorityClass); empty when absent.
  std::string queue_name, priority_class;
  json spec;  // the raw spec, for passthrough fields (resources, volumes, scheduling, training)
};

JobSpec parse_job(const json& job);

std::string service_name(const JobSpec& j);
std::string config_map_name(const JobSpec& j);
std::string pod_name(const JobSpec& j, int rank);
std::string network_policy_name(const JobSpec& j);  // <job>
std::string export_job_name(const JobSpec& j);      // <job>-export
// <job>.export: with a dot, which no PPUJob that can run has in its name (its pods' hostnames
// <job>-rank-<k> are DNS labels), so no job's own NetworkPolicy <job> can take this name.
std::string export_network_policy_name(const JobSpec& j);
// <namespace>-<job>-<first 8 characters of the uid>: unique per job object, stable across restarts.
std::string run_id(const JobSpec& j);
// <job>-rendezvous: the pod and the Service of the live-recovery store.
std::string rendezvous_name(const JobSpec& j);
// The store the ranks rendezvous at: rank 0 (<job>-rank-0.<job>.<ns>.svc, spec.masterPort) with
// recovery gang; the rendezvous Service (<job>-rendezvous.<ns>.svc, contract::kRendezvousPort)
// with recovery live.
std::string master_addr(const JobSpec& j);
int master_port(const JobSpec& j);
// Rank encoded in a pod's ppu.dev/rank label; nullopt when absent or malformed.
std::optional<int> pod_rank(const json& pod);

}  // namespace ppu::op
