#include "reconcile/job_status.h"

#include "core/job_contract.h"
#include "kube/kube_words.h"
#include "kube/rfc3339.h"

namespace ppu::op {

std::string pod_phase(const json& pod) {
  if (!pod.contains("status")) return pod_phase_name::kPending;
  return pod["status"].value("phase", std::string(pod_phase_name::kPending));
}

bool pod_terminating(const json& pod) {
  return pod.contains("metadata") && pod["metadata"].contains("deletionTimestamp") &&
         !pod["metadata"]["deletionTimestamp"].is_null();
}

bool pod_ready(const json& pod) {
  if (pod_phase(pod) != pod_phase_name::kRunning) return false;
  const json& st = pod["status"];
  if (!st.contains("conditions")) return false;
  for (const auto& c : st["conditions"])
    if (c.value("type", "") == kube_condition::kReady) return c.value("status", "") == condition_status::kTrue;
  return false;
}

std::optional<FatalExit> fatal_exit(const json& pod) {
  if (!pod.contains("status") || !pod["status"].contains("containerStatuses")) return std::nullopt;
  for (const auto& cs : pod["status"]["containerStatuses"]) {
    for (const char* which : {"state", "lastState"}) {
      if (!cs.contains(which) || !cs[which].contains("terminated")) continue;
      const json& t = cs[which]["terminated"];
      int code = t.value("exitCode", 0);
      // Failing the job does not depend on the recovery policy.
      if (contract::on_exit(code, /*live=*/false) == contract::OnExit::FailJob)
        return FatalExit{code, t.value("message", std::string())};
    }
  }
  return std::nullopt;
}

std::optional<int> exit_code(const json& pod) {
  const json st = pod.value("status", json::object());
  for (const auto& cs : st.value("containerStatuses", json::array()))
    if (cs.contains("state") && cs["state"].contains("terminated"))
      return cs["state"]["terminated"].value("exitCode", 0);
  return std::nullopt;
}

std::string termination_message(const json& pod) {
  const json st = pod.value("status", json::object());
  for (const auto& cs : st.value("containerStatuses", json::array()))
    if (cs.contains("state") && cs["state"].contains("terminated"))
      return cs["state"]["terminated"].value("message", std::string());
  return "";
}

std::optional<Unscheduled> why_unschedulable(const json& pod) {
  if (pod_phase(pod) != pod_phase_name::kPending) return std::nullopt;
  const json st = pod.value("status", json::object());
  for (const auto& c : st.value("conditions", json::array())) {
    if (c.value("type", "") != kube_condition::kPodScheduled) continue;
    if (c.value("status", "") != condition_status::kFalse || c.value("reason", "") != kUnschedulableReason)
      return std::nullopt;
    return Unscheduled{c.value("message", std::string()), parse_rfc3339(c.value("lastTransitionTime", ""))};
  }
  return std::nullopt;
}

std::string failure_reason(const json& pod) {
  const json st = pod.value("status", json::object());
  std::string reason = st.value("reason", std::string());
  if (!reason.empty()) return reason;  // Evicted, NodeLost, DeadlineExceeded, ...
  if (pod_phase(pod) == pod_phase_name::kUnknown) return pod_phase_name::kUnknown;
  for (const auto& cs : st.value("containerStatuses", json::array()))
    if (cs.contains("state") && cs["state"].contains("terminated"))
      return "exit code " + std::to_string(cs["state"]["terminated"].value("exitCode", 0));
  return pod_phase_name::kFailed;
}

}  // namespace ppu::op
