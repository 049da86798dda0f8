// The shared fixtures of the operator's unit tests: PPUJob, Pod and export Job JSON as the
// informers would hold them, job statuses and rank results at a fixed time, the Observed state
// of a job, and readers of a Decision (the status it writes, as the JSON sent; its actions by
// kind; its events).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_result.h"
#include "kube/rfc3339.h"
#include "reconcile/actions.h"
#include "reconcile/export_job.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"
#include "reconcile/object_builder.h"
#include "reconcile/reconciler.h"
#include "reconcile/rendezvous.h"

namespace ppu::op::testing {

// The time of every pass in the unit tests, and a time relative to it.
inline constexpr int64_t kNow = 1'800'000'000;
inline std::string at(int64_t offset) { return format_rfc3339(kNow + offset); }

inline json make_job(const std::string& name = "demo", int replicas = 4, json status = json::object()) {
  json job = {{"apiVersion", "ppu.dev/v1alpha1"},
              {"kind", "PPUJob"},
              {"metadata",
               {{"name", name},
                {"namespace", "ns1"},
                {"uid", "0123456789abcdef"},
                {"generation", 1},
                {"resourceVersion", "42"}}},
              {"spec",
               {{"replicas", replicas},
                {"image", "ppu:test"},
                {"training", {{"model", {{"preset", "tiny"}}}, {"slicing", {{"mode", "mlp"}, {"slices", 2}}}}},
                {"runPolicy", {{"backoffLimit", 2}, {"cleanPodPolicy", "Running"}}}}}};
  if (!status.empty()) job["status"] = std::move(status);
  return job;
}

// The pod the operator creates for `rank` of the job `j`, with the gang's slice plan.
inline json rank_pod(const JobSpec& j, int rank, int restart = 0) {
  return build_pod(j, rank, restart, shared_slices(j));
}

// The pod the operator would have created for `rank`, in `phase`.
inline json make_pod(const json& job, int rank, const std::string& phase) {
  json pod = rank_pod(parse_job(job), rank);
  pod["metadata"]["uid"] = "pod-" + std::to_string(rank);
  pod["status"] = {{"phase", phase}};
  if (phase == "Running") pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  return pod;
}

inline json with_exit(json pod, int code, const std::string& message) {
  pod["status"]["phase"] = code == 0 ? "Succeeded" : "Failed";
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "ppu-train"}, {"state", {{"terminated", {{"exitCode", code}, {"message", message}}}}}}});
  return pod;
}

inline std::vector<json> gang(const json& job, int k, const std::string& phase) {
  std::vector<json> pods;
  pods.reserve(k);
  for (int r = 0; r < k; ++r) pods.push_back(make_pod(job, r, phase));
  return pods;
}

// spec.export (default settings unless given) on a job whose checkpoints are on the PVC "ckpt".
inline json with_export(json job, json spec_export = json::object()) {
  job["spec"]["checkpoint"] = {{"claimName", "ckpt"}};
  job["spec"]["export"] = std::move(spec_export);
  return job;
}

// The export Job the operator would have created for `job`, as the Job controller left it:
// `condition` "" (running), "Complete" or "Failed" (with the Job controller's reason).
inline json make_export_job(const json& job, const std::string& condition = "") {
  json x = build_export_job(parse_job(job));
  x["metadata"]["uid"] = "export-uid-1";
  x["status"] = json::object();
  if (condition == "Complete") x["status"]["conditions"] = json::array({{{"type", "Complete"}, {"status", "True"}}});
  else if (condition == "Failed")
    x["status"]["conditions"] =
        json::array({{{"type", "Failed"},
                      {"status", "True"},
                      {"reason", "PodFailurePolicy"},
                      {"message", "Container ppu-export for pod ns1/x failed with exit code 4"}}});
  return x;
}

// A pod of `export_job` that ended with `exit_code` (0: Succeeded) and termination message `message`.
inline json make_export_pod(const json& export_job, int exit_code, const std::string& message,
                            const std::string& created = "2027-01-15T08:00:00Z", const std::string& name = "x-1") {
  const json& md = export_job["metadata"];
  json pod = {{"metadata",
               {{"name", md["name"].get<std::string>() + "-" + name},
                {"namespace", md["namespace"]},
                {"uid", "pod-" + name},
                {"creationTimestamp", created},
                {"labels", export_job["spec"]["template"]["metadata"]["labels"]},
                {"ownerReferences", json::array({{{"apiVersion", "batch/v1"},
                                                  {"kind", "Job"},
                                                  {"name", md["name"]},
                                                  {"uid", md["uid"]},
                                                  {"controller", true}}})}}},
              {"status",
               {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                {"containerStatuses",
                 json::array({{{"name", kExportContainer},
                               {"state", {{"terminated", {{"exitCode", exit_code}, {"message", message}}}}}}})}}}};
  return pod;
}

// ---- statuses and results ----

// A running job's status: restarted `restarts` times, started 100 s ago.
inline json running_status(int restarts = 0) {
  return {{"phase", phase::kRunning}, {"restartCount", restarts}, {"startTime", at(-100)}};
}

// A job that ended (`phase` Succeeded or Failed) `completed_ago` seconds ago, started 1000 s ago.
inline json finished_status(const char* phase, int64_t completed_ago) {
  return {{"phase", phase}, {"restartCount", 0}, {"startTime", at(-1000)}, {"completionTime", at(-completed_ago)}};
}

// A succeeded rank's termination message, as ppu-train writes it (core/run_result.h): round 10,
// perplexity 12.18, checkpoint round 10.
inline std::string rank_result() {
  RunResult r;
  r.round = 10;
  r.eval_loss = 2.5;
  r.perplexity = 12.18;
  r.steps = 100;
  r.tokens = 6400;
  r.checkpoint_round = 10;
  r.seconds = 5;
  r.checksum = "00ff00ff00ff00ff";
  return format_run_result(r);
}

// Condition `type` of a status as JSON (a copy), if it has one.
inline std::optional<json> condition_of(const json& status, const std::string& type) {
  if (!status.contains("conditions")) return std::nullopt;
  for (const auto& c : status.at("conditions"))
    if (c.value("type", "") == type) return c;
  return std::nullopt;
}

// ---- the observed state ----

// What reconcile() sees of `job` at kNow: its rank pods and, with `owned_objects`, the ConfigMap,
// Service and NetworkPolicy it owns, as the operator built them.
inline Observed observed(const json& job, std::vector<json> pods = {}, bool owned_objects = true) {
  Observed in;
  in.job = job;
  in.pods = std::move(pods);
  in.now = kNow;
  if (owned_objects) {
    JobSpec s = parse_job(job);
    in.service = build_service(s);
    in.config_map = build_config_map(s);
    in.network_policy = build_network_policy(s, in.options.metrics_namespaces);
  }
  return in;
}

// ---- reading a Decision ----

// The status the decision writes, as the JSON the executor sends; nullopt when it writes none.
inline std::optional<json> new_status(const Decision& d) {
  for (const auto& a : d.actions)
    if (const auto* u = std::get_if<UpdateStatus>(&a)) return json(u->status);
  return std::nullopt;
}

// The status after the decision: the one it writes, else the one observed.
inline json status_after(const Observed& in, const Decision& d) {
  if (auto st = new_status(d)) return *st;
  return in.job.value("status", json::object());
}

// The decision's actions of type A (CreateObject, DeleteObject, ...), in order.
template <class A>
std::vector<A> actions_of(const Decision& d) {
  std::vector<A> out;
  for (const auto& a : d.actions)
    if (const auto* x = std::get_if<A>(&a)) out.push_back(*x);
  return out;
}

// Those of them on objects of `kind` (A has a `kind`: CreateObject, PatchObject, DeleteObject).
template <class A>
std::vector<A> actions_of(const Decision& d, ResourceKind kind) {
  std::vector<A> out;
  for (const auto& a : actions_of<A>(d))
    if (a.kind == kind) out.push_back(a);
  return out;
}

template <class A>
int count(const Decision& d) {
  return static_cast<int>(actions_of<A>(d).size());
}

template <class A>
int count(const Decision& d, ResourceKind kind) {
  return static_cast<int>(actions_of<A>(d, kind).size());
}

// The reasons of the decision's events, in order.
inline std::vector<std::string> event_reasons(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& e : actions_of<RecordEvent>(d)) out.push_back(e.reason);
  return out;
}

inline int count_events(const Decision& d, const std::string& reason) {
  int n = 0;
  for (const auto& r : event_reasons(d)) n += r == reason;
  return n;
}

inline bool has_event(const Decision& d, const std::string& reason) { return count_events(d, reason) > 0; }

// What reconcile() sees of a live-recovery job: its ranks, its store's pod Running, and every
// owned object.
inline Observed observed_live(const json& job, std::vector<json> pods) {
  Observed in = observed(job, std::move(pods));
  const JobSpec s = parse_job(job);
  in.rendezvous_service = build_rendezvous_service(s);
  json store = build_rendezvous_pod(s, 0);
  store["metadata"]["uid"] = "store-1";
  store["status"] = {{"phase", "Running"}};
  in.rendezvous_pod = store;
  return in;
}

// Names of the pods a decision deletes / creates, in order.
inline std::vector<std::string> deleted_pods(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& a : actions_of<DeleteObject>(d, ResourceKind::Pod)) out.push_back(a.name);
  return out;
}
inline std::vector<std::string> created_pods(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& a : actions_of<CreateObject>(d, ResourceKind::Pod)) out.push_back(a.name);
  return out;
}

}  // namespace ppu::op::testing
