// Live recovery (training.network.recovery live): the ranks that remain finish the round without
// a lost rank, re-form their group and take its replacement back at a round boundary (the
// runtime's half, docs/RECOVERY.md). The operator's half is here: a rank pod lost for a reason
// that contract::on_exit restarts alone (every exit but 2 and 4, fatal, and 3, the survivors'
// gang restart: policy_restart.cpp; or no exit: the pod vanished or its node was lost) is
// replaced alone, under the same name and rank, while the other pods keep running; the store
// they rendezvous at lives in its own pod (rendezvous.h). Each lost pod counts once in
// status.recoveries; at most spec.runPolicy.maxRecoveries loss events per recoveryWindowSeconds
// (a node's pods lost together are one; past the budget, a gang restart from the checkpoint), and
// a rank lost again within the window is recreated only after its back-off (recovery_pacing.h),
// so a rank that cannot stay up neither spins nor is recreated for ever. A lost rank's pod stuck
// terminating on a lost node is force-deleted so that its name, the replacement's, is freed
// (node_health.h). The store's pod is replaced alone too, as often as it is lost (the ranks rebuild
// its keys). Condition Degraded says whether the live group is short.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/job_contract.h"
#include "kube/rfc3339.h"
#include "reconcile/node_health.h"
#include "reconcile/reconcile_pass.h"
#include "reconcile/recovery_pacing.h"
#include "reconcile/rendezvous.h"

namespace ppu::op::detail::policy {

namespace {

std::string uid_of(const json& pod) { return pod["metadata"].value("uid", std::string()); }

// Entries whose replacement the caches now show (a pod of that rank with another uid) are done;
// so are those of ranks that no longer exist.
void forget_replaced(std::vector<RecoveringRank>& recovering, const Gang& g) {
  recovering.erase(std::remove_if(recovering.begin(), recovering.end(),
                                  [&](const RecoveringRank& e) {
                                    if (e.rank < 0 || e.rank >= g.size) return true;
                                    auto it = g.by_rank.find(static_cast<int>(e.rank));
                                    return it != g.by_rank.end() && uid_of(*it->second) != e.pod_uid;
                                  }),
                   recovering.end());
}

// The entry of `rank` (with `uid`, when given), or nullptr.
RecoveringRank* entry_of(std::vector<RecoveringRank>& recovering, int rank, const std::string* uid) {
  for (auto& e : recovering)
    if (e.rank == rank && (!uid || e.pod_uid == *uid)) return &e;
  return nullptr;
}

// A loss this pass found and has not counted yet.
struct Loss {
  int rank = 0;
  std::string uid;  // "" when the pod vanished unseen
  std::string what;
  std::optional<StuckPod> forced;  // set when this pass force-deleted the pod from its lost node
};

void announce_force_deletion(Pass& p, int rank, const StuckPod& s) {
  p.force_deletions++;
  p.event(event_type::kWarning, reason::kPodForceDeleted,
          "rank " + std::to_string(rank) + " pod " + pod_name(p.spec, rank) + " was stuck terminating on " +
              describe(s) +
              "; force-deleted it (grace period 0) so that its replacement can be created. If the node comes back, "
              "its kubelet kills the old container, and until then the old process is out of the live group "
              "(it exits 5)");
}

// A rank's pod stuck terminating: force-deleted once its node is lost and its grace period over
// (requeued for then), and a loss unless it was counted already.
void release_stuck(Pass& p, int rank, const json& pod, std::vector<RecoveringRank>& recovering,
                   std::vector<Loss>& lost) {
  if (!p.in.options.force_delete_on_lost_node) return;
  const StuckPod s = stuck_on_lost_node(pod, p.in.nodes, p.in.now);
  if (s.wait_s >= 0) p.requeue_in(static_cast<double>(s.wait_s));
  if (!s.force_delete) return;
  p.force_delete_pod(pod);
  const std::string uid = uid_of(pod);
  if (RecoveringRank* e = entry_of(recovering, rank, &uid)) {
    if (!e->force_deleted_from) {
      e->force_deleted_from = s.node;
      announce_force_deletion(p, rank, s);
    }
    return;
  }
  lost.push_back(Loss{rank, uid, "was stuck terminating on " + describe(s), s});
}

// The store's pod failed, vanished or is stuck on a lost node: it goes (force-deleted in the
// last case), and keep_rendezvous creates it again under its name; the ranks rebuild its keys
// (docs/RECOVERY.md). An event says so; no gang restart, no recovery counted.
void replace_lost_store(Pass& p, const Gang& g) {
  const std::string store = "rendezvous pod " + rendezvous_name(p.spec);
  const std::string after = "; recreating it: the ranks rebuild its keys (no gang restart)";
  if (g.rendezvous && pod_lost(*g.rendezvous)) {
    p.delete_pod(*g.rendezvous);
    p.event(event_type::kWarning, reason::kStoreReplaced,
            store + " failed (" + failure_reason(*g.rendezvous) + ")" + after);
  } else if (g.rendezvous_terminating && p.in.rendezvous_pod && p.in.options.force_delete_on_lost_node) {
    const StuckPod s = stuck_on_lost_node(*p.in.rendezvous_pod, p.in.nodes, p.in.now);
    if (s.wait_s >= 0) p.requeue_in(static_cast<double>(s.wait_s));
    if (!s.force_delete) return;
    p.force_delete_pod(*p.in.rendezvous_pod);
    p.force_deletions++;
    p.event(event_type::kWarning, reason::kPodForceDeleted,
            store + " was stuck terminating on " + describe(s) + "; force-deleted it (grace period 0)" + after);
  } else if (!g.rendezvous && !g.rendezvous_terminating && p.phase() == JobPhase::Running) {
    p.event(event_type::kWarning, reason::kStoreReplaced,
            store + " disappeared (deleted, evicted or node lost)" + after);
  }
}

std::string window_words(const RunPolicy& rp) {
  return rp.recovery_window_seconds > 0 ? "in the last " + std::to_string(rp.recovery_window_seconds) + " s"
                                        : "over the job's lifetime";
}

// Counts the losses (the budget allowed them): status.recoveries, recoveringRanks and
// recentRecoveries, each replacement's back-off, the events.
void count_losses(Pass& p, const std::vector<Loss>& lost, int64_t used, std::vector<RecoveringRank>& recovering,
                  std::vector<RecoveryRecord>& window) {
  const RunPolicy& rp = p.spec.run_policy;
  const std::string now = format_rfc3339(p.in.now);
  p.status.recoveries = p.status.recoveries.value_or(0) + static_cast<int64_t>(lost.size());
  for (const Loss& l : lost) {
    const int64_t attempt = loss_attempt(window, l.rank);
    const int64_t wait = recovery_backoff(attempt, rp);
    RecoveringRank e{l.rank, l.uid, now, attempt, std::nullopt, std::nullopt};
    if (wait > 0) e.recreate_after = format_rfc3339(p.in.now + wait);
    if (l.forced) e.force_deleted_from = l.forced->node;
    recovering.push_back(e);
    const int64_t before = loss_events(window);
    window.push_back(RecoveryRecord{l.rank, now});
    used += loss_events(window) - before;  // a loss of the same event (a node's pods) costs nothing more
    p.event(event_type::kWarning, reason::kRankRecovery,
            "rank " + std::to_string(l.rank) + " " + l.what + "; recreating only this rank's pod (loss event " +
                std::to_string(used) + " of " + std::to_string(rp.max_recoveries) + " " + window_words(rp) +
                "); the other ranks continue");
    if (l.forced) announce_force_deletion(p, l.rank, *l.forced);
    if (wait > 0) {
      p.recovery_backoffs++;
      p.event(event_type::kWarning, reason::kRankRecoveryBackoff,
              "rank " + std::to_string(l.rank) + " was lost " + std::to_string(attempt) + " times " + window_words(rp) +
                  "; its replacement waits " + std::to_string(wait) + " s (until " + *e.recreate_after +
                  ", spec.runPolicy.recoveryBackoffSeconds doubled per loss, at most " +
                  std::to_string(rp.recovery_backoff_max_seconds) + " s)");
    }
  }
  if (window.size() > kRecoveryHistoryMax) window.erase(window.begin(), window.end() - kRecoveryHistoryMax);
}

// Ranks whose replacement's back-off has not passed are held, with a requeue for when it has.
void hold_backed_off(Pass& p, const std::vector<RecoveringRank>& recovering) {
  for (const auto& e : recovering) {
    if (!e.recreate_after) continue;
    const auto t = parse_rfc3339(*e.recreate_after);
    if (!t || *t <= p.in.now) continue;
    p.held_ranks.insert(static_cast<int>(e.rank));
    p.requeue_in(static_cast<double>(*t - p.in.now));
  }
}

}  // namespace

bool live_recovery(Pass& p, const Gang& g) {
  if (p.spec.recovery != Recovery::Live) return false;
  replace_lost_store(p, g);
  const RunPolicy& rp = p.spec.run_policy;
  std::vector<RecoveringRank> recovering = p.status.recovering_ranks.value_or(std::vector<RecoveringRank>{});
  forget_replaced(recovering, g);
  std::vector<RecoveryRecord> window = in_window(p.status.recent_recoveries.value_or(std::vector<RecoveryRecord>{}),
                                                 p.in.now, rp.recovery_window_seconds);

  // Missing ranks are losses once the job has run (before, they are creations not yet observed).
  bool started = p.phase() == JobPhase::Running;
  for (const auto& [r, pod] : g.by_rank) {
    const auto ph = pod_phase(*pod);
    started = started || ph == pod_phase_name::kRunning || ph == pod_phase_name::kSucceeded;
  }
  std::vector<Loss> lost;
  for (int r = 0; r < g.size; ++r) {
    if (auto t = g.terminating_ranks.find(r); t != g.terminating_ranks.end()) {
      release_stuck(p, r, *t->second, recovering, lost);  // otherwise: wait until it is gone
      continue;
    }
    auto it = g.by_rank.find(r);
    if (it != g.by_rank.end()) {
      const json& pod = *it->second;
      if (!pod_lost(pod)) continue;
      // Only the exits contract::on_exit restarts alone (fatal_exit and rank_failure took the others).
      if (const auto code = exit_code(pod); code && contract::on_exit(*code, true) != contract::OnExit::RestartRank)
        continue;
      // Deleted every pass until it is gone (uid precondition): its name is the replacement's.
      p.delete_pod(pod);
      const std::string uid = uid_of(pod);
      if (entry_of(recovering, r, &uid)) continue;
      lost.push_back(Loss{r, uid, "failed (" + failure_reason(pod) + ")", std::nullopt});
    } else if (!entry_of(recovering, r, nullptr) && started && !p.spec.elastic) {
      // Gone unseen: deleted by hand, evicted and removed, or garbage-collected with its node. An
      // elastic job's rank without a pod may be a slot it just grew into: created, not counted
      // (its failed pods still count).
      lost.push_back(Loss{r, "", "pod disappeared (deleted, evicted or node lost)", std::nullopt});
    }
  }

  if (!lost.empty()) {
    const int64_t used = loss_events(window);
    std::vector<RecoveryRecord> with_these = window;
    for (const Loss& l : lost) with_these.push_back(RecoveryRecord{l.rank, format_rfc3339(p.in.now)});
    const int64_t limit = rp.max_recoveries;
    if (loss_events(with_these) > limit) {
      // A job that keeps losing ranks faster than its budget falls back to a gang restart from
      // its latest checkpoint rather than failing: backoffLimit bounds those restarts, and a
      // fresh gang with fresh pods may well do better than replacement after replacement.
      for (const Loss& l : lost)
        if (l.forced) announce_force_deletion(p, l.rank, *l.forced);
      p.status.recent_recoveries = window;
      if (!p.status.recoveries) p.status.recoveries = 0;
      const std::string why = "rank " + std::to_string(lost.front().rank) + " " + lost.front().what +
                              "; spec.runPolicy.maxRecoveries=" + std::to_string(limit) + " loss events " +
                              window_words(rp) + " exhausted (" + std::to_string(used) + " counted)";
      p.event(event_type::kWarning, reason::kRecoveryLimitExceeded,
              why + ": falling back to a gang restart from the latest checkpoint");
      return restart_gang(p, g, why + ": gang restart from the latest checkpoint");
    }
    count_losses(p, lost, used, recovering, window);
  }
  hold_backed_off(p, recovering);
  if (recovering.empty()) p.status.recovering_ranks.reset();
  else p.status.recovering_ranks = recovering;
  if (window.empty()) p.status.recent_recoveries.reset();
  else p.status.recent_recoveries = window;
  return false;  // the pass's missing ranks (keep_gang) create the replacements
}

void keep_rendezvous(Pass& p, const Gang& g) {
  if (p.spec.recovery != Recovery::Live || g.rendezvous || g.rendezvous_terminating) return;
  p.create(ResourceKind::Pod, build_rendezvous_pod(p.spec, p.restarts()));
}

void keep_store_size(Pass& p, const Gang& g) {
  if (!p.spec.elastic || !g.rendezvous || !p.in.config_map) return;
  const std::string want = std::to_string(p.spec.replicas);
  // The pod waits for the ConfigMap: a kubelet that remounted before its copy of the ConfigMap
  // changed would keep the old size until its next periodic sync.
  if (p.in.config_map->value("data", json::object()).value(kDesiredRanksKey, std::string()) != want) return;
  const json& md = (*g.rendezvous)["metadata"];
  if (md.value("annotations", json::object()).value(kDesiredRanksAnnotation, std::string()) == want) return;
  p.patch(ResourceKind::Pod, name_of(*g.rendezvous),
          json{{"metadata", {{"annotations", {{kDesiredRanksAnnotation, want}}}}}});
}

constexpr std::size_t kResizeHistoryMax = 32;  // status.resizes' maxItems

void resized(Pass& p) {
  if (!p.spec.elastic) {
    p.status.desired_replicas.reset();
    return;
  }
  const int64_t to = p.spec.replicas;
  if (p.status.desired_replicas && *p.status.desired_replicas != to) {
    const int64_t from = *p.status.desired_replicas;
    const JobResize resize{format_rfc3339(p.in.now), p.status.outer_round, from, to};
    p.status.last_resize = resize;
    auto history = p.status.resizes.value_or(std::vector<JobResize>{});
    history.push_back(resize);
    if (history.size() > kResizeHistoryMax) history.erase(history.begin(), history.end() - kResizeHistoryMax);
    p.status.resizes = history;
    p.event(event_type::kNormal, reason::kResized,
            "resized from " + std::to_string(from) + " to " + std::to_string(to) + " of " +
                std::to_string(slots(p.spec)) + " ranks: " +
                (to > from ? "the new ranks join at the job's next round boundary or sync point"
                           : "the ranks above leave at the job's next round boundary"));
  }
  p.status.desired_replicas = to;
}

void degraded(Pass& p) {
  if (p.spec.recovery != Recovery::Live) return;
  const std::string all = std::to_string(p.spec.replicas);
  if (p.phase() != JobPhase::Running) {
    p.cond(condition::kDegraded, false, reason::kNotRunning, "the job is not running");
    return;
  }
  const auto& live = p.status.live_ranks;
  const auto& coverage = p.status.min_slice_coverage;
  // A rank whose pod is being replaced is missing from the group whatever the last scrape saw:
  // a replacement can be back before any scrape sees the group short.
  std::string replacing;
  for (const auto& e : p.status.recovering_ranks.value_or(std::vector<RecoveringRank>{}))
    replacing += (replacing.empty() ? "" : ",") + std::to_string(e.rank);
  if (!live && !coverage && replacing.empty()) {
    p.cond(condition::kDegraded, false, reason::kLiveGroupNotReported,
           "no rank has reported its live group yet (ppu_live_ranks, ppu_min_slice_coverage)");
    return;
  }
  // An elastic job is short only below minReplicas: above it, ranks missing (Pending, being
  // replaced) make it smaller, not degraded (docs/RESIZE.md).
  const bool short_of_ranks = live && *live < required_replicas(p.spec);
  const bool uncovered = coverage && std::strtod(coverage->c_str(), nullptr) < 1.0;
  const std::string figures = (live ? std::to_string(*live) : std::string("?")) + " of " + all +
                              " ranks in the live group" +
                              (p.spec.elastic ? " (at least " + std::to_string(required_replicas(p.spec)) + ")" : "") +
                              ", smallest slice coverage " + coverage.value_or("?") +
                              (replacing.empty() ? "" : "; rank(s) [" + replacing + "] being replaced");
  if (short_of_ranks || uncovered || (!replacing.empty() && !p.spec.elastic))
    p.cond(condition::kDegraded, true, reason::kLiveGroupDegraded, figures);
  else p.cond(condition::kDegraded, false, reason::kLiveGroupComplete, figures);
}

}  // namespace ppu::op::detail::policy
