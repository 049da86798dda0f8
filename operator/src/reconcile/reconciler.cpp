// reconcile(): the order in which the policies see a pass, plus what every active job needs
// whatever the policies decide: its owned objects (ConfigMap, Service, NetworkPolicy), the rank
// pods that are missing, the Running transition, the refusal condition and the rank counts; with
// recovery live also the rendezvous store's Service and pod.
#include "reconcile/reconciler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "kube/rfc3339.h"
#include "reconcile/job_status.h"
#include "reconcile/object_builder.h"
#include "reconcile/reconcile_pass.h"
#include "reconcile/rendezvous.h"

namespace ppu::op {

double restart_backoff(int restart_count, const ReconcileOptions& o) {
  const double d = o.restart_backoff_s * std::pow(2.0, std::max(0, restart_count - 1));
  return std::min(d, o.restart_backoff_max_s);
}

namespace detail {

Gang observe_gang(Pass& p) {
  Gang g;
  g.size = p.spec.replicas;
  for (const auto& pod : p.in.pods) {
    auto r = pod_rank(pod);
    if (pod_terminating(pod)) {
      g.any_terminating = true;
      if (r) g.terminating_ranks[*r] = &pod;
      continue;
    }
    if (r && *r >= g.size && *r < slots(p.spec) && p.spec.elastic && pod_phase(pod) == pod_phase_name::kRunning) {
      g.retiring[*r] = &pod;  // retires itself at the next round boundary
      continue;
    }
    if (r && *r < g.size && p.spec.elastic && pod_phase(pod) == pod_phase_name::kSucceeded &&
        contract::is_retired_message(termination_message(pod).c_str())) {
      p.delete_pod(pod);  // it retired at a boundary that saw a smaller size: the job grew back to its slot
      continue;
    }
    if (!r || *r >= g.size || g.by_rank.count(*r)) {
      p.delete_pod(pod);  // not one of the K ranks (e.g. left over from a larger replicas)
      continue;
    }
    g.by_rank[*r] = &pod;
  }
  if (const auto& store = p.in.rendezvous_pod) {
    if (pod_terminating(*store)) {
      g.any_terminating = g.rendezvous_terminating = true;
    } else if (p.spec.recovery != Recovery::Live) {
      p.delete_pod(*store);  // left from a live configuration changed while suspended
      g.any_terminating = g.rendezvous_terminating = true;
    } else {
      g.rendezvous = &*store;
    }
  }
  return g;
}

namespace {

void count_ranks(Pass& p) {
  int ready = 0, active = 0, failed = 0;
  for (const auto& pod : p.in.pods) {
    if (pod_terminating(pod) || p.deleted.count(name_of(pod))) continue;
    auto ph = pod_phase(pod);
    if (ph == pod_phase_name::kPending || ph == pod_phase_name::kRunning) ++active;
    if (ph == pod_phase_name::kFailed || ph == pod_phase_name::kUnknown) ++failed;
    if (pod_ready(pod)) ++ready;
  }
  p.status.ready_ranks = ready;
  p.status.active_ranks = active;
  p.status.failed_ranks = failed;
  p.status.ready_string = std::to_string(ready) + "/" + std::to_string(p.spec.replicas);
  if (!p.status.restart_count) p.status.restart_count = 0;
  if (p.spec.recovery == Recovery::Live && !p.status.recoveries) p.status.recoveries = 0;
  p.status.observed_generation = p.spec.generation;
}

// What the job's stops cost, as its ranks recorded them. A stop count above the one in status
// (none: 0) is a new stop: status.lastStop and an event. A count that is not above it (a rank
// that knows fewer stops) changes nothing; a first count of 0 only says the job never stopped.
void copy_stop_cost(Pass& p, const ScrapedProgress& pr) {
  if (!pr.stops || !pr.rounds_lost || *pr.stops <= p.status.stops.value_or(-1)) return;
  const bool new_stop = *pr.stops > p.status.stops.value_or(0);
  p.status.stops = *pr.stops;
  p.status.rounds_lost = *pr.rounds_lost;
  if (!new_stop || !pr.last_stop_round || !pr.last_stop_resumed_round) return;
  const JobStop stop{*pr.last_stop_round, *pr.last_stop_resumed_round,
                     std::max<int64_t>(0, *pr.last_stop_round - *pr.last_stop_resumed_round)};
  p.event(event_type::kWarning, reason::kRoundsLost,
          "the job stopped at outer round " + std::to_string(stop.round) + " and resumed from round " +
              std::to_string(stop.resumed_round) + ": " + std::to_string(stop.rounds_lost) + " round(s) lost (" +
              std::to_string(*p.status.rounds_lost) + " over the job's " + std::to_string(*pr.stops) + " stop(s))");
  p.status.last_stop = stop;
}

// Live figures from the last scrape, while the job runs; a finished job's status is its result
// (policy_completion.cpp) and no later scrape may overwrite it.
void copy_progress(Pass& p) {
  if (!p.in.progress || p.phase() == JobPhase::Succeeded || p.phase() == JobPhase::Failed) return;
  const auto& pr = *p.in.progress;
  if (pr.outer_round) p.status.outer_round = *pr.outer_round;
  if (pr.checkpoint_round) p.status.last_checkpoint_round = *pr.checkpoint_round;
  if (pr.step && pr.steps_target && *pr.steps_target > 0) {
    p.status.step = *pr.step;
    p.status.steps = *pr.steps_target;
    p.status.progress_percentage = std::clamp<int64_t>(*pr.step * 100 / *pr.steps_target, 0, 100);
  }
  if (pr.remaining_seconds && std::isfinite(*pr.remaining_seconds))
    p.status.estimated_remaining_seconds = std::llround(std::max(0.0, *pr.remaining_seconds));
  copy_stop_cost(p, pr);
  if (pr.eval_perplexity && std::isfinite(*pr.eval_perplexity)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", *pr.eval_perplexity);
    p.status.perplexity = std::string(buf);
  }
  // The live group exists only with recovery live (a gang job's ranks may export the gauges too).
  if (p.spec.recovery != Recovery::Live) return;
  if (pr.live_ranks) p.status.live_ranks = *pr.live_ranks;
  if (pr.min_slice_coverage && std::isfinite(*pr.min_slice_coverage)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", std::clamp(*pr.min_slice_coverage, 0.0, 1.0));
    p.status.min_slice_coverage = std::string(buf);
  }
}

void ensure_owned_objects(Pass& p) {
  if (!p.in.config_map) {
    p.create(ResourceKind::ConfigMap, build_config_map(p.spec));
  } else {
    // The training config may change while suspended (CEL allows it), an elastic job's size at any
    // time (its store reads it from the volume): keep the ConfigMap in step.
    const json want = config_map_data(p.spec);
    const json& cm = *p.in.config_map;
    const json have = cm.value("data", json::object());
    if (have != want) p.patch(ResourceKind::ConfigMap, config_map_name(p.spec), json{{"data", want}});
  }
  if (!p.in.service) p.create(ResourceKind::Service, build_service(p.spec));
  // Before any pod: a rank must never be reachable before its job's policy exists.
  if (p.in.options.network_policy) {
    json want = build_network_policy(p.spec, p.in.options.metrics_namespaces);
    if (!p.in.network_policy) p.create(ResourceKind::NetworkPolicy, want);
    else if (p.in.network_policy->value("spec", json()) != want["spec"])
      p.patch(ResourceKind::NetworkPolicy, network_policy_name(p.spec), json{{"spec", want["spec"]}});
  }
  // recovery live: the store's Service (its pod is created with the ranks, keep_rendezvous()).
  if (p.spec.recovery == Recovery::Live && !p.in.rendezvous_service)
    p.create(ResourceKind::Service, build_rendezvous_service(p.spec));
  else if (p.spec.recovery != Recovery::Live && p.in.rendezvous_service)
    p.delete_object(ResourceKind::Service, *p.in.rendezvous_service);
}

// A refusal seen while this pass still has objects to create keeps PodCreationFailed True;
// once nothing is left to create (or nothing was refused) it turns False. The Warning event
// goes first in the pass (a refused create aborts the rest) and only when the refusal is new.
void note_refusal(Pass& p) {
  const Condition* c = p.status.condition(condition::kPodCreationFailed);
  const bool was = c && c->is_true();
  if (p.in.refusal && p.creates_anything()) {
    const auto& r = *p.in.refusal;
    std::string kind = resource(r.kind).kind;
    std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char ch) { return std::tolower(ch); });
    std::string msg =
        "creating " + kind + " " + r.name + " was refused (HTTP " + std::to_string(r.code) + "): " + r.message;
    if (msg.size() > 2048) msg = msg.substr(0, 2048);
    const bool news = !was || c->message != msg;
    p.cond(condition::kPodCreationFailed, true, r.reason, msg);
    p.status.reason = r.reason;
    p.status.message = msg;
    if (news)
      p.actions.insert(p.actions.begin(), RecordEvent{/*type=*/event_type::kWarning,
                                                      /*reason=*/reason::kPodCreationFailed,
                                                      /*message=*/msg + "; retrying with back-off"});
  } else if (was) {
    const std::string old_reason = c->reason;
    const bool created = !p.in.refusal;  // else: nothing left to create (suspended, waiting to restart)
    const std::string msg = created ? "the objects refused earlier have been created" : "nothing left to create";
    p.cond(condition::kPodCreationFailed, false, created ? reason::kCreated : reason::kNothingToCreate, msg);
    if (p.status.reason.value_or("") == old_reason) {
      p.status.reason.reset();
      p.status.message.reset();
    }
    if (created) p.event(event_type::kNormal, reason::kCreated, msg);
  }
}

// No policy settled the pass: create the ranks that are missing, and enter Running once all
// K run. A gang is created whole: while any old pod is terminating, nothing is. A running live
// job replaces ranks one by one: a rank waits only for its own name (and for its back-off).
void keep_gang(Pass& p, const Gang& g) {
  const int K = g.size;
  const bool one_by_one =
      p.spec.recovery == Recovery::Live && p.phase() == JobPhase::Running && !g.rendezvous_terminating;
  if (!one_by_one && g.any_terminating && static_cast<int>(g.by_rank.size()) < K) return;  // wait for names
  policy::keep_rendezvous(p, g);
  std::vector<int> missing;
  for (int r = 0; r < K; ++r)
    if (!g.by_rank.count(r) && !g.terminating_ranks.count(r) && !p.held_ranks.count(r)) missing.push_back(r);
  const bool created = !missing.empty();
  if (created) {
    const std::vector<int> slices = shared_slices(p.spec);
    for (int r : missing) p.create(ResourceKind::Pod, build_pod(p.spec, r, p.restarts(), slices));
  }
  if (created && p.restarts() == 0 && g.by_rank.empty())
    p.event(event_type::kNormal, reason::kGangCreated, "created " + std::to_string(K) + " rank pods");

  int running = 0;
  for (const auto& [r, pod] : g.by_rank)
    if (pod_phase(*pod) == pod_phase_name::kRunning || pod_phase(*pod) == pod_phase_name::kSucceeded) ++running;
  if (running == K && p.phase() != JobPhase::Running) {
    p.status.phase = JobPhase::Running;
    p.cond(condition::kRunning, true, reason::kAllRanksRunning, "all " + std::to_string(K) + " ranks are running");
    p.event(event_type::kNormal, reason::kRunning, "all " + std::to_string(K) + " ranks are running");
  }
}

void run(Pass& p) {
  if (p.in.job["metadata"].contains("deletionTimestamp")) return;  // garbage collection owns it now
  const std::optional<JobPhase> ph = p.phase();
  if (ph == JobPhase::Succeeded || ph == JobPhase::Failed) {
    policy::release_workload(p);
    policy::finished(p);
    return;
  }
  if (policy::suspend(p)) {
    policy::release_workload(p);
    note_refusal(p);  // nothing to create while suspended: a pending refusal is moot
    return;
  }
  policy::resume(p);
  if (!ph) {
    p.status.phase = JobPhase::Pending;
    p.status.restart_count = 0;
    p.cond(condition::kCreated, true, reason::kCreated, "PPUJob accepted by ppu-operator");
  }
  ensure_owned_objects(p);
  policy::resized(p);
  const Gang g = observe_gang(p);
  policy::keep_store_size(p, g);
  if (policy::admission(p, g)) {
    note_refusal(p);
    return;
  }
  if (!p.status.start_time) p.status.start_time = format_rfc3339(p.in.now);
  if (policy::deadline(p)) return;

  const bool settled = policy::restarting(p, g) || policy::fatal_exit(p, g) || policy::completion(p, g) ||
                       policy::rank_failure(p, g) || policy::live_recovery(p, g);
  if (!settled) keep_gang(p, g);
  note_refusal(p);
}

}  // namespace

Decision Pass::result() {
  count_ranks(*this);
  copy_progress(*this);
  policy::degraded(*this);
  policy::unschedulable(*this);
  Decision d;
  if (json(status) != observed_status) d.actions.emplace_back(UpdateStatus{spec.name, status});
  for (auto& a : actions) d.actions.push_back(std::move(a));
  d.requeue_after_s = requeue;
  d.gang_restart = gang_restart;
  d.force_deletions = force_deletions;
  d.recovery_backoffs = recovery_backoffs;
  return d;
}

}  // namespace detail

Decision reconcile(const Observed& in) {
  detail::Pass pass(in);
  detail::run(pass);
  return pass.result();
}

}  // namespace ppu::op
