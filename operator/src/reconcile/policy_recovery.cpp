// Live recovery (training.network.recovery live): the ranks that remain finish the round without
// a lost rank, re-form their group and take its replacement back at a round boundary (the
// runtime's half, docs/RECOVERY.md). The operator's half is here: a rank pod lost for any reason
// but exit codes 2 and 4 (fatal, policy_restart.cpp) and 3 (the survivors' gang restart) is
// replaced alone, under the same name and rank, while the other pods keep running; the store
// they rendezvous at lives in its own pod (rendezvous.h). Each lost pod counts once in
// status.recoveries, up to spec.runPolicy.maxRecoveries (a rank that cannot stay up would
// otherwise be recreated for ever), and condition Degraded says whether the live group is short.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "reconcile/reconcile_pass.h"
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

bool recorded(const std::vector<RecoveringRank>& recovering, int rank, const std::string* uid) {
  return std::any_of(recovering.begin(), recovering.end(),
                     [&](const RecoveringRank& e) { return e.rank == rank && (!uid || e.pod_uid == *uid); });
}

}  // namespace

bool live_recovery(Pass& p, const Gang& g) {
  if (p.spec.recovery != Recovery::Live) return false;
  std::vector<RecoveringRank> recovering = p.status.recovering_ranks.value_or(std::vector<RecoveringRank>{});
  forget_replaced(recovering, g);

  // Missing ranks are losses once the job has run (before, they are creations not yet observed).
  bool started = p.phase() == JobPhase::Running;
  for (const auto& [r, pod] : g.by_rank) {
    const auto ph = pod_phase(*pod);
    started = started || ph == pod_phase_name::kRunning || ph == pod_phase_name::kSucceeded;
  }
  std::vector<std::pair<int, std::string>> lost;  // rank, what happened
  for (int r = 0; r < g.size; ++r) {
    if (g.terminating_ranks.count(r)) continue;  // wait until it is gone
    auto it = g.by_rank.find(r);
    if (it != g.by_rank.end()) {
      const json& pod = *it->second;
      if (!pod_lost(pod)) continue;
      // Deleted every pass until it is gone (uid precondition): its name is the replacement's.
      p.delete_pod(pod);
      const std::string uid = uid_of(pod);
      if (recorded(recovering, r, &uid)) continue;
      recovering.push_back(RecoveringRank{r, uid});
      lost.emplace_back(r, "failed (" + failure_reason(pod) + ")");
    } else if (!recorded(recovering, r, nullptr) && started) {
      // Gone unseen: deleted by hand, evicted and removed, or garbage-collected with its node.
      recovering.push_back(RecoveringRank{r, ""});
      lost.emplace_back(r, "pod disappeared (deleted, evicted or node lost)");
    }
  }
  if (recovering.empty()) p.status.recovering_ranks.reset();
  else p.status.recovering_ranks = recovering;
  if (lost.empty()) return false;

  const int64_t limit = p.spec.run_policy.max_recoveries;
  const int64_t before = p.status.recoveries.value_or(0);
  const int64_t after = before + static_cast<int64_t>(lost.size());
  const std::string first = "rank " + std::to_string(lost.front().first) + " " + lost.front().second;
  if (after > limit) {
    p.status.recoveries = before;
    finish(p, false, reason::kRecoveryLimitExceeded,
           first + "; spec.runPolicy.maxRecoveries=" + std::to_string(limit) + " recoveries exhausted");
    return true;
  }
  p.status.recoveries = after;
  int64_t n = before;
  for (const auto& [r, what] : lost)
    p.event(event_type::kWarning, reason::kRankRecovery,
            "rank " + std::to_string(r) + " " + what + "; recreating only this rank's pod (recovery " +
                std::to_string(++n) + " of " + std::to_string(limit) + "); the other ranks continue");
  return false;  // the pass's missing ranks (keep_gang) create the replacements
}

void keep_rendezvous(Pass& p, const Gang& g) {
  if (p.spec.recovery != Recovery::Live || g.rendezvous || g.rendezvous_terminating) return;
  p.create(ResourceKind::Pod, build_rendezvous_pod(p.spec, p.restarts()));
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
  if (!live && !coverage) {
    p.cond(condition::kDegraded, false, reason::kLiveGroupNotReported,
           "no rank has reported its live group yet (ppu_live_ranks, ppu_min_slice_coverage)");
    return;
  }
  const bool short_of_ranks = live && *live < p.spec.replicas;
  const bool uncovered = coverage && std::strtod(coverage->c_str(), nullptr) < 1.0;
  const std::string figures = (live ? std::to_string(*live) : std::string("?")) + " of " + all +
                              " ranks in the live group, smallest slice coverage " + coverage.value_or("?");
  if (short_of_ranks || uncovered) p.cond(condition::kDegraded, true, reason::kLiveGroupDegraded, figures);
  else p.cond(condition::kDegraded, false, reason::kLiveGroupComplete, figures);
}

}  // namespace ppu::op::detail::policy
