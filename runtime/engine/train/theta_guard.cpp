#include "engine/train/theta_guard.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "engine/comm/live_group.h"

namespace ppu {

ThetaGuard::ThetaGuard(Collectives& collectives, const StreamingSchedule& schedule, RunParts run,
                       LiveRecovery* live_recovery)
    : collectives_(collectives), schedule_(schedule), run_(run), live_recovery_(live_recovery) {}

void ThetaGuard::check(int fragment) {
  if (collectives_.job_size() == 1) return;
  const auto mine = static_cast<int64_t>(run_.outer.fragment_digest(fragment));
  const auto digests = until_one_generation_completes(
      live_recovery_, [&] { return collectives_.allgather(torch::tensor({mine}, torch::kInt64)); });
  std::vector<int64_t> all;
  for (const auto& d : digests) all.push_back(d.item<int64_t>());
  int root = 0;
  for (int r = 0; r < static_cast<int>(all.size()); ++r)
    if (std::count(all.begin(), all.end(), all[r]) > std::count(all.begin(), all.end(), all[root])) root = r;
  std::vector<int> wrong;
  for (int r = 0; r < static_cast<int>(all.size()); ++r)
    if (all[r] != all[root]) wrong.push_back(collectives_.members()[r]);
  if (wrong.empty()) return;
  spdlog::error("θ of fragment {} before its sync at step {} differs on rank(s) [{}]: resynchronised from rank {}",
                schedule_.fragments()[fragment].name, run_.progress.step, ranks_text(wrong),
                collectives_.members()[root]);
  until_one_generation_completes(live_recovery_, [&] {
    run_.outer.resync_fragment(collectives_, fragment, root);
    return true;
  });
  run_.recovery.theta_mismatches += static_cast<int64_t>(wrong.size());
  run_.metrics.add_theta_mismatches(static_cast<int>(wrong.size()));
}

}  // namespace ppu
