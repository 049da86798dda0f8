// Scheduling: which of the job's pods the scheduler has no node for. A gang job waits Pending for
// such a pod and a live job runs without the rank in it (an elastic one smaller than
// spec.replicas, without being Degraded above minReplicas); either way condition
// PodsUnschedulable says which pods, since when and why, in the scheduler's words ("0/3 nodes
// are available: 3 Insufficient cpu."), and a Warning event says it once when it turns True.
// False, reason Scheduled, once every pod has a node; a job none of whose pods ever waited has no
// such condition.
#include <algorithm>
#include <string>
#include <vector>

#include "kube/rfc3339.h"
#include "reconcile/job_status.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

namespace {

constexpr std::size_t kNamesListed = 8;  // the message names this many pods, then counts the rest

struct Waiting {
  std::string pod;
  Unscheduled why;
};

std::vector<Waiting> waiting_pods(const Pass& p) {
  std::vector<Waiting> out;
  auto look_at = [&](const json& pod) {
    if (pod_terminating(pod) || p.deleted.count(name_of(pod))) return;
    if (auto why = why_unschedulable(pod)) out.push_back({name_of(pod), std::move(*why)});
  };
  for (const auto& pod : p.in.pods) look_at(pod);
  if (p.in.rendezvous_pod) look_at(*p.in.rendezvous_pod);
  // The longest waiting first (its message leads), then by name.
  std::sort(out.begin(), out.end(), [&](const Waiting& a, const Waiting& b) {
    const int64_t ta = a.why.since.value_or(p.in.now), tb = b.why.since.value_or(p.in.now);
    return ta != tb ? ta < tb : a.pod < b.pod;
  });
  return out;
}

std::string describe(const std::vector<Waiting>& waiting) {
  std::string names;
  for (std::size_t i = 0; i < waiting.size() && i < kNamesListed; ++i) names += (i ? ", " : "") + waiting[i].pod;
  if (waiting.size() > kNamesListed) names += " and " + std::to_string(waiting.size() - kNamesListed) + " more";
  const Waiting& first = waiting.front();
  std::string msg =
      std::to_string(waiting.size()) + (waiting.size() == 1 ? " pod has" : " pods have") + " no node (" + names + ")";
  // A time, not a duration: the message (and with it the status) must not change from pass to pass.
  if (first.why.since) msg += ", the first since " + format_rfc3339(*first.why.since);
  msg += ": " + (first.why.message.empty() ? std::string("the scheduler gave no reason") : first.why.message);
  if (msg.size() > 1024) msg.resize(1024);
  return msg;
}

}  // namespace

void unschedulable(Pass& p) {
  const Condition* c = p.status.condition(condition::kPodsUnschedulable);
  const bool was = c && c->is_true();
  const std::vector<Waiting> waiting = waiting_pods(p);
  if (!waiting.empty()) {
    const std::string msg = describe(waiting);
    p.cond(condition::kPodsUnschedulable, true, reason::kUnschedulable, msg);
    if (!was) p.event(event_type::kWarning, reason::kUnschedulable, msg);
  } else if (c) {
    p.cond(condition::kPodsUnschedulable, false, reason::kScheduled, "every pod of the job has a node");
  }
}

}  // namespace ppu::op::detail::policy
