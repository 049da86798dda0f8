#include "engine/train/notice_departure.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "common/notice.h"
#include "core/coowners.h"
#include "core/elastic_size.h"
#include "core/exit_status.h"
#include "engine/comm/live_group.h"

namespace ppu {

NoticeDeparture::NoticeDeparture(const Config& config, int rank, const SlicePlan& plan, Collectives& collectives,
                                 const RunProgress& progress, LiveRecovery* live_recovery, RunCheckpoints* checkpoints)
    : config_(config),
      rank_(rank),
      plan_(plan),
      collectives_(collectives),
      progress_(progress),
      live_recovery_(live_recovery),
      checkpoints_(checkpoints) {}

BoundaryVote NoticeDeparture::vote() {
  BoundaryVote vote;
  const double degraded_s = live_recovery_ ? live_recovery_->degraded_seconds() : 0;
  const bool full = checkpoints_ && checkpoints_->upload_full();
  if (collectives_.job_size() == 1) {
    if (notice_received()) vote.leavers.push_back(0);
    vote.upload_room = !full;
    return vote;
  }
  // A row: this member's notice, degraded milliseconds, full upload, an elastic job's desired size
  // as this member read it from the store (-1: none), then by job rank whether it is away with a
  // notice (as this member read the store; the rows' union is the answer).
  constexpr int64_t kDesired = 3, kAway = 4;
  auto row = torch::zeros({kAway + collectives_.job_size()}, torch::kInt64);
  row[0] = int64_t{notice_received()};
  row[1] = static_cast<int64_t>(degraded_s * 1000);
  row[2] = int64_t{full};
  const auto desired = live_recovery_ && config_.network.min_ranks > 0 ? live_recovery_->desired_ranks() : std::nullopt;
  row[kDesired] = desired.value_or(-1);
  if (away_)
    for (int r : away_()) row[kAway + r] = 1;
  const auto said = until_one_generation_completes(live_recovery_, [&] { return collectives_.allgather(row); });
  for (std::size_t i = 0; i < said.size(); ++i) {
    const auto got = said[i].accessor<int64_t, 1>();
    if (got[0] != 0) vote.leavers.push_back(collectives_.members()[i]);
    vote.degraded_s = std::max(vote.degraded_s, static_cast<double>(got[1]) / 1000);
    if (got[2] != 0) vote.upload_room = false;
    if (got[kDesired] >= 0 && !vote.desired) vote.desired = static_cast<int>(got[kDesired]);  // the lowest member's
    for (int r = 0; r < collectives_.job_size(); ++r)  // several members may report one rank away
      if (got[kAway + r] != 0 && !contains(vote.leavers, r)) vote.leavers.push_back(r);
  }
  std::sort(vote.leavers.begin(), vote.leavers.end());
  return vote;
}

// Finishing the round, not saving mid-round state: a round boundary's checkpoint is the one
// resume path every run already takes (bit-exact), and the leavers' deltas of this round reach
// θ; checkpoint.notice_s bounds the wait (common/notice.h).
Departure NoticeDeparture::departure_of(const BoundaryVote& vote) const {
  if (vote.leavers.empty() || progress_.step == config_.train.steps) return Departure::None;  // done anyway
  if (!live_recovery_) return Departure::Job;
  std::vector<int> staying;
  for (int r : collectives_.members())
    if (!contains(vote.leavers, r)) staying.push_back(r);
  const bool enough = static_cast<double>(staying.size()) >=
                      config_.network.min_live_fraction * required_ranks(config_, collectives_.job_size());
  return !staying.empty() && enough && every_slice_owned(staying, plan_.slices()) ? Departure::Ranks : Departure::Job;
}

void NoticeDeparture::depart(const BoundaryVote& vote, Departure departure) {
  const bool leaving = contains(vote.leavers, rank_);
  const std::string where = fmt::format("round {} (step {})", progress_.rounds, progress_.step);
  if (departure == Departure::Ranks) {
    if (!leaving) {
      live_recovery_->let_go(vote.leavers);
      return;
    }
    throw LeftOnNotice(notice_signal(), fmt::format("rank {} left the live group at the end of {}, {:.1f} s after its "
                                                    "notice; the others go on without it",
                                                    rank_, where, seconds_since_notice()));
  }
  // The caller wrote this round's checkpoint unless its write failed (a full disk).
  const bool written = checkpoints_ && progress_.last_checkpoint_round == progress_.rounds;
  if (written) checkpoints_->note_stopped_on_notice(vote.leavers);
  const std::string saved =
      written        ? "the job's state is saved in the checkpoint of " + where
      : checkpoints_ ? "this round's checkpoint could not be written: the job resumes from the last one written"
                     : "the job has no checkpoint.dir: its state is not saved";
  spdlog::warn("rank(s) [{}] had a notice by the end of {}: the job stops; {}", ranks_text(vote.leavers), where, saved);
  if (leaving)
    throw LeftOnNotice(notice_signal(), fmt::format("the job stopped at the end of {}, {:.1f} s after this rank's "
                                                    "notice; {}",
                                                    where, seconds_since_notice(), saved));
  throw PeerFailure(
      fmt::format("rank(s) [{}] left on notice at the end of {} and the job cannot go on without "
                  "them: gang restart; {}",
                  ranks_text(vote.leavers), where, saved));
}

}  // namespace ppu
