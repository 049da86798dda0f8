// Export: once a job has Succeeded and spec.export asks for its model, one batch/v1 Job runs
// ppu-export on the checkpoint volume (export_job.h), and condition Exported follows that Job:
// ExportRunning while it runs (ExportJobRefused while the API server refuses to create it),
// ModelExported (True) with status.export saying where the model is, or ExportFailed with
// ppu-export's own error line. The phase never changes: a failed export is a reason on a
// Succeeded job, not a failed job. Level-triggered: the Job's name is fixed, so asking to create
// it again is a no-op (AlreadyExists), and an export that succeeded is not run again. Deleting a
// failed export Job asks for a new attempt; changing spec.export replaces the Job.
#include <string>

#include "reconcile/export_job.h"
#include "reconcile/export_outcome.h"
#include "reconcile/reconcile_pass.h"

namespace ppu::op::detail::policy {

namespace {

// How long after its Job's completionTime a succeeded export waits for its pod's report to reach
// the cache before it is recorded without one (the pod may have been deleted by hand).
constexpr int64_t kReportGraceSeconds = 30;

// Sets condition Exported; true when its reason or message changed (one event per change).
bool report(Pass& p, bool exported, const char* why, const std::string& message) {
  const Condition* c = p.status.condition(condition::kExported);
  const bool changed = !c || c->reason != why || c->message != message;
  p.cond(condition::kExported, exported, why, message);
  return changed;
}

// status.export describes a model written with exactly these settings.
bool exported_as(const Pass& p, const ExportSpec& e) {
  const Condition* c = p.status.condition(condition::kExported);
  if (!c || !c->is_true() || !p.status.model_export) return false;
  const ExportedModel& x = *p.status.model_export;
  return x.path.value_or("") == e.path && x.format.value_or("") == e.format && x.dtype.value_or("") == e.dtype;
}

std::string where(const JobSpec& j, const ExportSpec& e) {
  const std::string claim = checkpoint_claim_name(j);
  return e.path + "/ on " + (claim.empty() ? std::string("the checkpoint volume") : "PersistentVolumeClaim " + claim);
}

std::string settings_of(const json& job) {
  const json md = job.value("metadata", json::object());
  return md.value("annotations", json::object()).value(kExportSettingsAnnotation, std::string());
}

void ensure_network_policy(Pass& p) {
  if (!p.in.options.network_policy) return;
  json want = build_export_network_policy(p.spec);
  if (!p.in.export_network_policy) {
    p.create(ResourceKind::NetworkPolicy, want);
  } else if (p.in.export_network_policy->value("spec", json()) != want["spec"]) {
    json spec = want["spec"];
    spec["ingress"] = nullptr;  // a merge patch removes a rule someone added only when told to
    p.patch(ResourceKind::NetworkPolicy, export_network_policy_name(p.spec), json{{"spec", spec}});
  }
}

std::string trimmed(std::string s, size_t max) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s.size() > max ? s.substr(0, max) + "..." : s;
}

std::string failure(const Pass& p, const json& job) {
  const auto pod = last_export_report(p.in.export_pods, pod_phase_name::kFailed);
  const std::string why = export_job_failure(job);
  std::string msg;
  if (pod) {
    msg = "ppu-export exited with code " + std::to_string(pod->exit_code);
    msg += pod->message.empty() ? " and no message" : ": " + trimmed(pod->message, 2048);
    if (!why.empty()) msg += " (" + why + ")";
  } else {
    msg = why.empty() ? "the export Job failed" : why;
  }
  return msg + "; delete Job " + export_job_name(p.spec) + " to try again";
}

void exported(Pass& p, const ExportSpec& e) {
  ExportedModel x;
  x.path = e.path;
  x.format = e.format;
  x.dtype = e.dtype;
  const std::string claim = checkpoint_claim_name(p.spec);
  if (!claim.empty()) x.claim_name = claim;
  std::string msg = "model written to " + where(p.spec, e) + " (format " + e.format + ", dtype " + e.dtype;
  const auto pod = last_export_report(p.in.export_pods, pod_phase_name::kSucceeded);
  const auto result = pod ? parse_export_result(pod->message) : std::nullopt;
  if (result) {
    x.round = result->round;
    msg += ", checkpoint round " + std::to_string(result->round) + ")";
    const int64_t last = p.status.outer_round.value_or(-1);
    if (last > result->round)
      msg += "; the run ended at round " + std::to_string(last) +
             ": the rounds after its last checkpoint are not in the model (training.checkpoint.every_rounds)";
  } else {
    msg += "; checkpoint round unknown: ppu-export's termination message was not readable)";
  }
  p.status.model_export = x;
  if (report(p, true, reason::kModelExported, msg)) p.event(event_type::kNormal, reason::kModelExported, msg);
}

// spec.export was removed: an export that had not ended is no longer asked for, so its condition
// goes (a finished one stays: it says what lies on the volume).
void forget_unfinished(Pass& p) {
  const Condition* c = p.status.condition(condition::kExported);
  if (!c) return;
  if (c->reason != reason::kExportRunning && c->reason != reason::kExportJobRefused) return;
  p.status.remove_condition(condition::kExported);
}

}  // namespace

void export_model(Pass& p) {
  if (p.phase() != JobPhase::Succeeded) return;
  if (!p.spec.model_export) {
    forget_unfinished(p);
    return;
  }
  const ExportSpec& e = *p.spec.model_export;
  if (exported_as(p, e)) return;
  const std::string name = export_job_name(p.spec);
  if (!checkpoint_volume_persists(p.spec)) {
    // The CRD refuses this combination; a job admitted before that rule still gets the reason.
    const std::string msg =
        "spec.checkpoint is not a volume that outlives the pods (an emptyDir, ephemeral or absent): the checkpoints "
        "went with the rank pods, so there is nothing to export";
    p.status.model_export.reset();
    if (report(p, false, reason::kExportFailed, msg)) p.event(event_type::kWarning, reason::kExportFailed, msg);
    return;
  }

  const json* job = p.in.export_job ? &*p.in.export_job : nullptr;
  if (job && pod_terminating(*job)) {  // a deleted Job (a retry, or replaced settings): its name frees soon
    report(p, false, reason::kExportRunning, "waiting for the previous export Job " + name + " to be deleted");
    return;
  }
  if (job && settings_of(*job) != export_settings(e)) {
    // spec.export changed since this Job was made: replace it. What it wrote stays on the volume.
    p.delete_object(ResourceKind::Job, *job);
    p.status.model_export.reset();
    report(p, false, reason::kExportRunning,
           "spec.export changed to " + export_settings(e) + ": replacing Job " + name);
    return;
  }

  ensure_network_policy(p);  // in the pass that creates the Job, before it: no moment unprotected
  const std::string running =
      "ppu-export is writing the model of the latest checkpoint to " + where(p.spec, e) + " (Job " + name + ")";
  if (!job) {
    p.create(ResourceKind::Job, build_export_job(p.spec));
    p.status.model_export.reset();
    const auto& r = p.in.refusal;
    if (r && (r->name == name || r->name == export_network_policy_name(p.spec))) {
      const std::string msg = "creating " + std::string(resource(r->kind).plural) + "/" + r->name +
                              " was refused (HTTP " + std::to_string(r->code) + "): " + trimmed(r->message, 2048) +
                              "; retrying";
      if (report(p, false, reason::kExportJobRefused, msg))
        p.event(event_type::kWarning, reason::kExportJobRefused, msg);
    } else if (report(p, false, reason::kExportRunning, running)) {
      p.event(event_type::kNormal, reason::kExportStarted, "created Job " + name + ": " + running);
    }
    return;
  }
  const ExportState state = export_state(*job);
  if (state != ExportState::Running && export_pod_unsettled(p.in.export_pods)) {
    // The Job ended but its pod's last status is still on its way: its report is in it.
    report(p, false, reason::kExportRunning, running);
    return;
  }
  switch (state) {
    case ExportState::Running: report(p, false, reason::kExportRunning, running); return;
    case ExportState::Succeeded: {
      const auto done = export_completion_time(*job);
      const int64_t due = done.value_or(p.in.now) + kReportGraceSeconds;
      if (!last_export_report(p.in.export_pods, pod_phase_name::kSucceeded) && done && p.in.now < due) {
        report(p, false, reason::kExportRunning, running);
        p.requeue_in(static_cast<double>(due - p.in.now));
        return;
      }
      exported(p, e);
      return;
    }
    case ExportState::Failed: {
      p.status.model_export.reset();
      const std::string msg = failure(p, *job);
      if (report(p, false, reason::kExportFailed, msg)) p.event(event_type::kWarning, reason::kExportFailed, msg);
      return;
    }
  }
}

bool export_pending(const Pass& p) {
  if (!p.spec.model_export || p.phase() != JobPhase::Succeeded) return false;
  const Condition* c = p.status.condition(condition::kExported);
  if (!c) return true;
  return c->reason != reason::kModelExported && c->reason != reason::kExportFailed;
}

}  // namespace ppu::op::detail::policy
