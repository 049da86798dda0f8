#include "reconciler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "job_constants.h"
#include "job_status.h"
#include "object_builder.h"
#include "rfc3339.h"

namespace ppu::op {

const char* to_string(ActionKind k) {
  switch (k) {
    case ActionKind::UpdateStatus: return "UpdateStatus";
    case ActionKind::Create: return "Create";
    case ActionKind::Patch: return "Patch";
    case ActionKind::Delete: return "Delete";
    case ActionKind::DeleteJob: return "DeleteJob";
    case ActionKind::Event: return "Event";
  }
  return "?";
}

double restart_backoff(int n, const ReconcileOptions& o) {
  double d = o.restart_backoff_s * std::pow(2.0, std::max(0, n - 1));
  return std::min(d, o.restart_backoff_max_s);
}

namespace {

std::string name_of(const json& obj) { return obj["metadata"]["name"].get<std::string>(); }

// Accumulates the decision; status is edited in place and emitted first if it changed.
struct Pass {
  const Observed& in;
  JobSpec spec;
  json old_status;
  json status;
  std::vector<Action> actions;
  double requeue = -1;
  bool gang_restart = false;
  std::set<std::string> deleted;

  explicit Pass(const Observed& o) : in(o), spec(parse_job(o.job)) {
    old_status = o.job.value("status", json::object());
    status = old_status;
  }

  std::string phase() const { return status.value("phase", std::string()); }
  int restarts() const { return status.value("restartCount", 0); }

  void requeue_in(double s) {
    s = std::max(s, 0.0);
    if (requeue < 0 || s < requeue) requeue = s;
  }
  void event(const std::string& type, const std::string& reason, const std::string& msg) {
    actions.push_back(Action{ActionKind::Event, "events", spec.name, {}, type, reason, msg});
  }
  void create(const std::string& resource, json obj) {
    std::string name = name_of(obj);
    actions.push_back(Action{ActionKind::Create, resource, name, std::move(obj), "", "", ""});
  }
  void delete_pod(const json& pod) {
    if (pod_terminating(pod)) return;
    std::string name = name_of(pod);
    if (!deleted.insert(name).second) return;
    json body = json::object();
    if (pod["metadata"].contains("uid")) body["uid"] = pod["metadata"]["uid"];
    actions.push_back(Action{ActionKind::Delete, "pods", name, body, "", "", ""});
  }
  void delete_pods_if(bool (*pred)(const json&)) {
    for (const auto& p : in.pods)
      if (pred(p)) delete_pod(p);
  }
  void cond(const std::string& type, bool on, const std::string& reason, const std::string& msg) {
    set_condition(status, type, on ? "True" : "False", reason, msg, in.now, spec.generation);
  }

  // Enters Succeeded or Failed: completion time, condition, event, active pods removed.
  void finish(bool succeeded, const std::string& reason, const std::string& message) {
    status["phase"] = succeeded ? phase::kSucceeded : phase::kFailed;
    status["completionTime"] = format_rfc3339(in.now);
    status.erase("nextRestartTime");
    cond(succeeded ? condition::kSucceeded : condition::kFailed, true, reason, message);
    cond(condition::kRunning, false, reason, message);
    if (const json* c = find_condition(status, kRefusedCondition); c && c->value("status", "") == "True")
      cond(kRefusedCondition, false, reason, "job finished");
    if (succeeded) {
      status.erase("reason");
      status.erase("message");
    } else {
      status["reason"] = reason;
      status["message"] = message;
    }
    event(succeeded ? event_type::kNormal : event_type::kWarning, reason, message);
    // Peers of a failed job would wait for rendezvous forever: remove active pods whatever
    // cleanPodPolicy says (it governs the finished ones, see finished()).
    delete_pods_if([](const json& p) {
      auto ph = pod_phase(p);
      return ph == pod_phase_name::kPending || ph == pod_phase_name::kRunning || ph == pod_phase_name::kUnknown;
    });
    finished();
  }

  // Terminal phases: cleanPodPolicy, then TTL.
  void finished() {
    const auto& policy = spec.run_policy.clean_pod_policy;
    if (policy == "All") {
      for (const auto& p : in.pods) delete_pod(p);
    } else if (policy == "Running") {
      delete_pods_if([](const json& p) {
        auto ph = pod_phase(p);
        return ph == pod_phase_name::kPending || ph == pod_phase_name::kRunning || ph == pod_phase_name::kUnknown;
      });
    }
    if (spec.run_policy.ttl_seconds_after_finished) {
      auto done = parse_rfc3339(status.value("completionTime", std::string()));
      int64_t at = done.value_or(in.now) + *spec.run_policy.ttl_seconds_after_finished;
      if (at <= in.now)
        actions.push_back(Action{ActionKind::DeleteJob, "ppujobs", spec.name, {}, "", "", ""});
      else
        requeue_in(static_cast<double>(at - in.now));
    }
  }

  void count_ranks() {
    int ready = 0, active = 0, failed = 0;
    for (const auto& p : in.pods) {
      if (pod_terminating(p) || deleted.count(name_of(p))) continue;
      auto ph = pod_phase(p);
      if (ph == pod_phase_name::kPending || ph == pod_phase_name::kRunning) ++active;
      if (ph == pod_phase_name::kFailed || ph == pod_phase_name::kUnknown) ++failed;
      if (pod_ready(p)) ++ready;
    }
    status["readyRanks"] = ready;
    status["activeRanks"] = active;
    status["failedRanks"] = failed;
    status["readyString"] = std::to_string(ready) + "/" + std::to_string(spec.replicas);
    if (!status.contains("restartCount")) status["restartCount"] = 0;
    status["observedGeneration"] = spec.generation;
  }

  void copy_progress() {
    if (!in.progress) return;
    if (in.progress->outer_round) status["outerRound"] = *in.progress->outer_round;
    if (in.progress->checkpoint_round) status["lastCheckpointRound"] = *in.progress->checkpoint_round;
    if (in.progress->eval_perplexity && std::isfinite(*in.progress->eval_perplexity)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", *in.progress->eval_perplexity);
      status["perplexity"] = buf;
    }
  }

  void ensure_owned_objects() {
    if (!in.config_map) {
      create("configmaps", build_config_map(spec));
    } else {
      // The training config may change while suspended (CEL allows it): keep the ConfigMap in step.
      std::string want = render_training_config(spec);
      const json& cm = *in.config_map;
      std::string have = cm.contains("data") ? cm["data"].value(kConfigKey, std::string()) : std::string();
      if (have != want)
        actions.push_back(Action{ActionKind::Patch, "configmaps", config_map_name(spec),
                                 json{{"data", {{kConfigKey, want}}}}, "", "", ""});
    }
    if (!in.service) create("services", build_service(spec));
    // Before any pod: a rank must never be reachable before its job's policy exists.
    if (in.options.network_policy) {
      json want = build_network_policy(spec, in.options.metrics_namespaces);
      if (!in.network_policy)
        create("networkpolicies", want);
      else if (in.network_policy->value("spec", json()) != want["spec"])
        actions.push_back(Action{ActionKind::Patch, "networkpolicies", network_policy_name(spec),
                                 json{{"spec", want["spec"]}}, "", "", ""});
    }
  }

  bool creates_anything() const {
    for (const auto& a : actions)
      if (a.kind == ActionKind::Create) return true;
    return false;
  }

  // A refusal seen while this pass still has objects to create keeps PodCreationFailed True;
  // once nothing is left to create (or nothing was refused) it turns False. The Warning event
  // goes first in the pass (a refused create aborts the rest) and only when the refusal is new.
  void note_refusal() {
    const json* c = find_condition(status, kRefusedCondition);
    const bool was = c && c->value("status", "") == "True";
    if (in.refusal && creates_anything()) {
      const auto& r = *in.refusal;
      std::string kind = r.resource == "networkpolicies" ? "networkpolicy"
                         : r.resource.empty()               ? "object"
                                                            : r.resource.substr(0, r.resource.size() - 1);
      std::string msg = "creating " + kind + " " + r.name + " was refused (HTTP " + std::to_string(r.code) +
                        "): " + r.message;
      if (msg.size() > 2048) msg = msg.substr(0, 2048);
      const bool news = !was || c->value("message", "") != msg;
      cond(kRefusedCondition, true, r.reason, msg);
      status["reason"] = r.reason;
      status["message"] = msg;
      if (news)
        actions.insert(actions.begin(), Action{ActionKind::Event, "events", spec.name, {}, event_type::kWarning,
                                               reason::kPodCreationFailed, msg + "; retrying with back-off"});
    } else if (was) {
      const std::string old_reason = c->value("reason", "");
      const bool created = !in.refusal;  // else: nothing left to create (suspended, waiting to restart)
      const std::string msg = created ? "the objects refused earlier have been created" : "nothing left to create";
      cond(kRefusedCondition, false, created ? reason::kCreated : reason::kNothingToCreate, msg);
      if (status.value("reason", "") == old_reason) {
        status.erase("reason");
        status.erase("message");
      }
      if (created) event(event_type::kNormal, reason::kCreated, msg);
    }
  }

  void run();
  void run_active();

  Decision result() {
    count_ranks();
    copy_progress();
    Decision d;
    if (status != old_status) {
      json job = in.job;
      job["status"] = status;
      d.actions.push_back(Action{ActionKind::UpdateStatus, "ppujobs", spec.name, std::move(job), "", "", ""});
    }
    for (auto& a : actions) d.actions.push_back(std::move(a));
    d.requeue_after_s = requeue;
    d.gang_restart = gang_restart;
    return d;
  }
};

void Pass::run() {
  if (in.job["metadata"].contains("deletionTimestamp")) return;  // garbage collection owns it now
  const std::string ph = phase();
  if (ph == phase::kSucceeded || ph == phase::kFailed) {
    finished();
    return;
  }
  if (spec.run_policy.suspend) {
    for (const auto& p : in.pods) delete_pod(p);
    if (ph != phase::kSuspended) {
      status["phase"] = phase::kSuspended;
      status.erase("nextRestartTime");
      cond(condition::kSuspended, true, reason::kSuspended, "spec.runPolicy.suspend is true; rank pods deleted");
      cond(condition::kRunning, false, reason::kSuspended, "job is suspended");
      event(event_type::kNormal, reason::kSuspended, "job suspended, rank pods deleted");
    }
    note_refusal();  // nothing to create while suspended: a pending refusal is moot
    return;
  }
  if (ph == phase::kSuspended) {
    // Resuming starts a new active period: the deadline counts from now, like batch/v1 Jobs.
    status["phase"] = phase::kPending;
    status["startTime"] = format_rfc3339(in.now);
    cond(condition::kSuspended, false, reason::kResumed, "spec.runPolicy.suspend is false");
    event(event_type::kNormal, reason::kResumed, "job resumed, recreating rank pods");
  }
  if (ph.empty()) {
    status["phase"] = phase::kPending;
    status["restartCount"] = 0;
    cond(condition::kCreated, true, reason::kCreated, "PPUJob accepted by ppu-operator");
  }
  if (!status.contains("startTime")) status["startTime"] = format_rfc3339(in.now);

  if (spec.run_policy.active_deadline_seconds) {
    int64_t start = parse_rfc3339(status["startTime"].get<std::string>()).value_or(in.now);
    int64_t deadline = start + *spec.run_policy.active_deadline_seconds;
    if (in.now >= deadline) {
      finish(false, reason::kDeadlineExceeded,
             "job was active longer than spec.runPolicy.activeDeadlineSeconds=" +
                 std::to_string(*spec.run_policy.active_deadline_seconds));
      return;
    }
    requeue_in(static_cast<double>(deadline - in.now));
  }

  ensure_owned_objects();
  run_active();
  note_refusal();
}

void Pass::run_active() {
  const int K = spec.replicas;
  std::map<int, const json*> by_rank;
  bool any_terminating = false;
  for (const auto& p : in.pods) {
    if (pod_terminating(p)) {
      any_terminating = true;
      continue;
    }
    auto r = pod_rank(p);
    if (!r || *r >= K || by_rank.count(*r)) {
      delete_pod(p);  // not one of the K ranks (e.g. left over from a larger replicas)
      continue;
    }
    by_rank[*r] = &p;
  }

  if (phase() == phase::kRestarting) {
    // Tear-down first; the new gang is created only once every old pod is gone (names repeat).
    if (!by_rank.empty() || any_terminating) {
      for (auto& [r, p] : by_rank) delete_pod(*p);
      return;
    }
    auto not_before = parse_rfc3339(status.value("nextRestartTime", std::string()));
    if (not_before && *not_before > in.now) {
      requeue_in(static_cast<double>(*not_before - in.now));
      return;
    }
    status["phase"] = phase::kPending;
    status.erase("nextRestartTime");
    cond(condition::kRestarting, false, reason::kGangRecreated, "rank pods recreated; ranks resume from the latest checkpoint");
    for (int r = 0; r < K; ++r) create("pods", build_pod(spec, r, restarts()));
    event(event_type::kNormal, reason::kGangCreated,
          "created " + std::to_string(K) + " rank pods (restart " + std::to_string(restarts()) + ")");
    return;
  }

  // Exit codes 2 and 4 will fail again however often we retry.
  for (auto& [r, p] : by_rank) {
    if (auto fx = fatal_exit(*p)) {
      std::string why = fx->message.empty() ? "no termination message" : fx->message;
      finish(false, fx->exit_code == 2 ? reason::kConfigurationError : reason::kCheckpointOrDataMissing,
             "rank " + std::to_string(r) + " exited with code " + std::to_string(fx->exit_code) + ": " + why);
      return;
    }
  }

  int succeeded = 0;
  bool started = false;
  std::string failure;
  for (auto& [r, p] : by_rank) {
    auto ph = pod_phase(*p);
    if (ph == pod_phase_name::kSucceeded) ++succeeded;
    if (ph == pod_phase_name::kRunning || ph == pod_phase_name::kSucceeded) started = true;
    if ((ph == pod_phase_name::kFailed || ph == pod_phase_name::kUnknown) && failure.empty())
      failure = "rank " + std::to_string(r) + " failed (" + failure_reason(*p) + ")";
  }
  if (succeeded == K) {
    finish(true, reason::kAllRanksSucceeded, "all " + std::to_string(K) + " ranks finished");
    return;
  }
  // A missing rank is a loss only once the gang has started; before that it is a creation that
  // has not happened (or not been observed) yet, and creating it again is harmless.
  if (failure.empty() && started && static_cast<int>(by_rank.size()) < K) {
    for (int r = 0; r < K; ++r)
      if (!by_rank.count(r)) {
        failure = "rank " + std::to_string(r) + " pod disappeared (deleted, evicted or node lost)";
        break;
      }
  }
  if (!failure.empty()) {
    if (restarts() >= spec.run_policy.backoff_limit) {
      finish(false, reason::kBackoffLimitExceeded,
             failure + "; spec.runPolicy.backoffLimit=" + std::to_string(spec.run_policy.backoff_limit) +
                 " restarts exhausted");
      return;
    }
    int n = restarts() + 1;
    double wait = restart_backoff(n, in.options);
    status["restartCount"] = n;
    status["phase"] = phase::kRestarting;
    status["nextRestartTime"] = format_rfc3339(in.now + static_cast<int64_t>(std::ceil(wait)));
    cond(condition::kRestarting, true, reason::kGangRestart, failure);
    cond(condition::kRunning, false, reason::kGangRestart, failure);
    gang_restart = true;
    event(event_type::kWarning, reason::kGangRestart,
          failure + "; restarting all " + std::to_string(K) + " ranks (restart " + std::to_string(n) + " of " +
              std::to_string(spec.run_policy.backoff_limit) + ")");
    for (auto& [r, p] : by_rank) delete_pod(*p);
    return;
  }

  if (any_terminating && static_cast<int>(by_rank.size()) < K) return;  // wait for names to free up
  bool created = false;
  for (int r = 0; r < K; ++r)
    if (!by_rank.count(r)) {
      create("pods", build_pod(spec, r, restarts()));
      created = true;
    }
  if (created && restarts() == 0 && by_rank.empty())
    event(event_type::kNormal, reason::kGangCreated, "created " + std::to_string(K) + " rank pods");

  int running = 0;
  for (auto& [r, p] : by_rank)
    if (pod_phase(*p) == pod_phase_name::kRunning || pod_phase(*p) == pod_phase_name::kSucceeded) ++running;
  if (running == K && phase() != phase::kRunning) {
    status["phase"] = phase::kRunning;
    cond(condition::kRunning, true, reason::kAllRanksRunning, "all " + std::to_string(K) + " ranks are running");
    event(event_type::kNormal, reason::kRunning, "all " + std::to_string(K) + " ranks are running");
  }
}

}  // namespace

Decision reconcile(const Observed& in) {
  Pass pass(in);
  pass.run();
  return pass.result();
}

}  // namespace ppu::op
