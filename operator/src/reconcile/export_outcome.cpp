#include "reconcile/export_outcome.h"

#include "kube/kube_words.h"
#include "kube/rfc3339.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_status.h"

namespace ppu::op {

namespace {

const json* true_condition(const json& job, const char* type) {
  const auto st = job.find("status");
  if (st == job.end() || !st->is_object()) return nullptr;
  const auto conditions = st->find("conditions");
  if (conditions == st->end() || !conditions->is_array()) return nullptr;
  for (const auto& c : *conditions)
    if (c.is_object() && c.value("type", "") == type && c.value("status", "") == condition_status::kTrue) return &c;
  return nullptr;
}

}  // namespace

ExportState export_state(const json& job) {
  // FailureTarget alone means "failing, pods still terminating": not finished yet.
  if (true_condition(job, kube_condition::kJobComplete)) return ExportState::Succeeded;
  if (true_condition(job, kube_condition::kJobFailed)) return ExportState::Failed;
  return ExportState::Running;
}

std::string export_job_failure(const json& job) {
  const json* c = true_condition(job, kube_condition::kJobFailed);
  if (!c) return "";
  const std::string why = c->value("reason", std::string()), what = c->value("message", std::string());
  return why.empty() ? what : what.empty() ? why : why + ": " + what;
}

std::optional<ExportPodReport> last_export_report(const std::vector<json>& pods, const std::string& phase) {
  const json* newest = nullptr;
  std::string newest_at;
  for (const auto& p : pods) {
    if (pod_phase(p) != phase) continue;
    const json md = p.value("metadata", json::object());
    // RFC 3339 in UTC sorts as text; the name breaks a tie (same second) deterministically.
    const std::string at = md.value("creationTimestamp", std::string()) + " " + md.value("name", std::string());
    if (!newest || at > newest_at) newest = &p, newest_at = at;
  }
  if (!newest) return std::nullopt;
  const json st = newest->value("status", json::object());
  for (const auto& cs : st.value("containerStatuses", json::array()))
    if (cs.contains("state") && cs["state"].contains("terminated")) {
      const json& t = cs["state"]["terminated"];
      return ExportPodReport{t.value("exitCode", 0), t.value("message", std::string())};
    }
  return std::nullopt;
}

bool export_pod_unsettled(const std::vector<json>& pods) {
  for (const auto& p : pods) {
    const std::string ph = pod_phase(p);
    if ((ph == pod_phase_name::kPending || ph == pod_phase_name::kRunning) && !pod_terminating(p)) return true;
  }
  return false;
}

std::optional<int64_t> export_completion_time(const json& job) {
  const json st = job.value("status", json::object());
  return st.is_object() ? parse_rfc3339(st.value("completionTime", std::string())) : std::nullopt;
}

}  // namespace ppu::op
