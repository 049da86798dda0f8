#include "reconcile/kueue_workload.h"

#include "kube/resource_kind.h"
#include "kube/typed_object.h"
#include "reconcile/object_builder.h"
#include "reconcile/ppujob_status.h"
#include "reconcile/rendezvous.h"

namespace ppu::op {

namespace {

// Kueue's words (kueue.x-k8s.io/v1beta2 Workload conditions and reasons: kube/kube_words.h).
using kueue_word::kAdmitted;
using kueue_word::kEvicted;
using kueue_word::kFinished;
using kueue_word::kQuotaReserved;
using kueue_word::kRequeued;
constexpr const char* kRanksPodSet = "ranks";
constexpr const char* kRendezvousPodSet = "rendezvous";

// The pod's spec as Kueue should count it. Kueue sums the containers' requests, and nothing
// defaults a Workload's template: a resource given only as a limit (GPUs usually are) gets the
// request the API server would give it in the pod, its limit.
json template_of(const json& pod) {
  json spec = pod["spec"];
  for (auto& c : spec["containers"]) {
    if (!c.contains("resources") || !c["resources"].contains("limits")) continue;
    json& res = c["resources"];
    if (!res.contains("requests")) res["requests"] = json::object();
    for (const auto& [name, limit] : res["limits"].items())
      if (!res["requests"].contains(name)) res["requests"][name] = limit;
  }
  return json{{"metadata", {{"labels", pod["metadata"].value("labels", json::object())}}}, {"spec", spec}};
}

std::vector<Condition> conditions_of(const json& workload) {
  const json st = workload.value("status", json::object());
  if (!st.contains("conditions") || !st["conditions"].is_array()) return {};
  return st["conditions"].get<std::vector<Condition>>();
}

const Condition* find(const std::vector<Condition>& cs, const std::string& type) {
  for (const auto& c : cs)
    if (c.type == type) return &c;
  return nullptr;
}

bool is_true(const std::vector<Condition>& cs, const char* type) {
  const Condition* c = find(cs, type);
  return c && c->is_true();
}

// Sets condition `type` in `cs` as metav1 does (the job's own conditions' rule: the transition
// time moves only with the status).
void set(std::vector<Condition>& cs, const std::string& type, bool on, const std::string& why,
         const std::string& message, int64_t now, int64_t generation) {
  PPUJobStatus holder;
  holder.conditions = std::move(cs);
  holder.set_condition(type, on ? condition_status::kTrue : condition_status::kFalse, why, message, now, generation);
  cs = std::move(holder.conditions);
}

json status_patch(const json& workload, const std::vector<Condition>& cs) {
  const json& md = workload["metadata"];
  return json{{"metadata", {{"resourceVersion", md.value("resourceVersion", std::string())}}},
              {"status", {{"conditions", cs}}}};
}

}  // namespace

std::string workload_name(const JobSpec& j) { return "ppujob-" + j.name; }

json build_workload(const JobSpec& j, std::optional<int64_t> priority) {
  json pod_sets = json::array();
  pod_sets.push_back(
      {{"name", kRanksPodSet}, {"count", slots(j)}, {"template", template_of(build_rank_pod_template(j))}});
  if (j.recovery == Recovery::Live)
    pod_sets.push_back(
        {{"name", kRendezvousPodSet}, {"count", 1}, {"template", template_of(build_rendezvous_pod(j, 0))}});
  json spec = {{"queueName", j.queue_name}, {"active", true}, {"podSets", pod_sets}};
  if (!j.priority_class.empty()) {
    spec["priorityClassRef"] = {{"group", resource(ResourceKind::WorkloadPriorityClass).group},
                                {"kind", resource(ResourceKind::WorkloadPriorityClass).kind},
                                {"name", j.priority_class}};
    spec["priority"] = priority.value_or(0);
  }
  json md = object_metadata(j, workload_name(j));
  md["labels"]["kueue.x-k8s.io/job-uid"] = j.uid;
  return typed_object(ResourceKind::Workload, {{"metadata", md}, {"spec", spec}});
}

WorkloadState read_workload(const json& workload) {
  WorkloadState w;
  const auto cs = conditions_of(workload);
  w.reserved = is_true(cs, kQuotaReserved);
  w.admitted = is_true(cs, kAdmitted);
  w.evicted = is_true(cs, kEvicted);
  w.finished = is_true(cs, kFinished);
  if (const Condition* c = find(cs, kEvicted); w.evicted) {
    w.why = c->message;
    w.evicted_reason = c->reason;
  } else if (const Condition* q = find(cs, kQuotaReserved); q && !q->is_true()) {
    w.why = q->message;
  }
  const json st = workload.value("status", json::object());
  if (st.contains("admission") && st["admission"].is_object())
    w.cluster_queue = st["admission"].value("clusterQueue", std::string());
  const json spec = workload.value("spec", json::object());
  for (const auto& ps : spec.value("podSets", json::array()))
    if (ps.value("name", std::string()) == kRanksPodSet) w.ranks = ps.value("count", int64_t{-1});
  return w;
}

json release_quota_patch(const json& workload, int64_t now) {
  auto cs = conditions_of(workload);
  const int64_t gen = workload["metadata"].value("generation", int64_t{0});
  const Condition* evicted = find(cs, kEvicted);
  const std::string why = evicted ? evicted->reason : std::string(kEvicted);
  const std::string message = evicted ? evicted->message : std::string("evicted");
  set(cs, kQuotaReserved, false, kueue_word::kPending, message, now, gen);
  set(cs, kAdmitted, false, kueue_word::kNoReservation, "The workload has no reservation", now, gen);
  // Kueue re-queues a preempted Workload, or one lost to node failures, by itself; after any
  // other eviction (a stopped queue, a deactivation) it waits for that cause to go away.
  set(cs, kRequeued, why == kueue_word::kPreempted || why == kueue_word::kNodeFailures, why, message, now, gen);
  json patch = status_patch(workload, cs);
  patch["status"]["admission"] = nullptr;
  return patch;
}

json finished_patch(const json& workload, bool succeeded, const std::string& message, int64_t now) {
  auto cs = conditions_of(workload);
  set(cs, kFinished, true, succeeded ? kueue_word::kSucceeded : kueue_word::kFailed, message, now,
      workload["metadata"].value("generation", int64_t{0}));
  return status_patch(workload, cs);
}

}  // namespace ppu::op
