// NoticeDeparture: what a notice (SIGTERM, SIGINT; common/notice.h) does at a round boundary.
// vote() is a collective: the members agree, by one all-gather, on who has had a notice since the
// last boundary, on the longest any of them has seen the job degraded, on an elastic job's desired
// size (LiveRecovery::resize acts on it), and on whether every one
// has room for a background checkpoint upload (so that the boundary's checkpoint needs no
// collective of its own). departure_of(vote) says
// who goes (with the ranks away_with() names: ranks sitting out quorum sync's sync points that
// had a notice, and who leave as a member that voted so does): a live job lets its leavers go and trains on, unless
// that leaves a slice with no owner or the group below network.min_live_fraction; then, and under gang, or when every
// member had the notice, the whole job goes (after the boundary's checkpoint, which the caller writes when the answer
// is Job). depart() acts on it and does not return for a leaver or when the job goes: a leaver throws LeftOnNotice
// (exit 128 + signal), the others of a job that goes throw PeerFailure (exit 3: a gang restart from the checkpoint just
// written); when only some leave, the others let them go and train on. The run's parts are given by reference and
// outlive it. Training thread only.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "core/config.h"
#include "core/slice_plan.h"
#include "engine/comm/collectives.h"
#include "engine/train/checkpoints.h"
#include "engine/train/live_recovery.h"
#include "engine/train/progress.h"

namespace ppu {

// What the members said at one round boundary.
struct BoundaryVote {
  std::vector<int> leavers;  // job ranks that had a notice
  double degraded_s = 0;     // the longest any member has seen the job degraded
  // No member's background upload had checkpoint.max_in_flight rounds in flight (inline: true).
  bool upload_room = true;
  // An elastic job's desired size (network.min_ranks) as the lowest member that could read it
  // from the store read it: one answer for every member.
  std::optional<int> desired;
};

enum class Departure { None, Ranks, Job };

class NoticeDeparture {
 public:
  // `live_recovery`, `checkpoints`: null without live recovery, without checkpoint.dir.
  NoticeDeparture(const Config& config, int rank, const SlicePlan& plan, Collectives& collectives,
                  const RunProgress& progress, LiveRecovery* live_recovery, RunCheckpoints* checkpoints);

  // Ranks outside the group in use that had a notice (QuorumSync::away_with_notice), asked
  // before each vote.
  void count_away_with(std::function<std::vector<int>()> away) { away_ = std::move(away); }

  BoundaryVote vote();
  Departure departure_of(const BoundaryVote& vote) const;
  void depart(const BoundaryVote& vote, Departure departure);

 private:
  const Config& config_;
  int rank_;
  const SlicePlan& plan_;
  Collectives& collectives_;
  const RunProgress& progress_;
  LiveRecovery* live_recovery_;
  RunCheckpoints* checkpoints_;
  std::function<std::vector<int>()> away_;
};

}  // namespace ppu
