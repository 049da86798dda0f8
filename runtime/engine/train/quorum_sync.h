// QuorumSync: outer.sync_mode = quorum for one rank (docs/QUORUM_SYNC.md): a slow rank does not
// set the job's pace. A sync point (an inner step after which fragments are due, and the last
// step) closes once a quorum of the group arrived and a grace window passed (QuorumGate); a rank
// still training towards a closed sync point skips its remaining steps there (a time budget per
// round), and every fragment's outer step weighs each rank's delta by the share of the
// fragment's window it trained (OuterOptimizer::set_weights). Contracts:
//  - start(step, replacement) once, where training starts.
//  - skips(step), before inner step `step`: whether this rank skips it (the sync point it is
//    training towards has closed, as far as its QuorumCloseWatch has seen). It asks the watch
//    only once the interval has lasted 0.8 x the fastest member's seconds a step in the last
//    one times its steps (fastest_step_seconds): before that no quorum can have arrived unless
//    a member sped up by more than a quarter. A rank whose last step took over 50 ms waits for
//    the watch's answer (a round trip is small beside its step, and a step more of it would hold
//    the group); a faster one reads it a step later, and never waits for the store.
//    Before that, a rank slower than the quorum (core/quorum_rule.h, AheadRule) skips *ahead*:
//    it does not start a step it predicts would end after the sync point closes (the
//    interval's steps at the quorum's pace plus the grace window), so the group never waits
//    for the rest of its step beyond the window; every kProbeEvery-th interval it trains as
//    the close allows, to measure its pace again (a rank that was slow may not be any more).
//    stepped(trained) after every step, skipped or not.
//  - meet(step) at a sync point: waits at the gate, then one all-gather of every member's wait,
//    trained steps, training seconds and per-fragment weights (through live recovery when there is one); the
//    group computes the same grace window from it. weigh(f) before fragment f's outer step puts
//    the weights on the outer optimiser and starts f's window again.
//  - θ stays one value per round: every member takes part in every outer step (a straggler
//    with what it trained); a member that never arrives (dead, stopped, cut off) is fenced at
//    the gate under live recovery (QuorumGate::ask_missing_with: its process does not answer by
//    the close), else by the heartbeat as under sync_mode all.
//  - Sitting out (outer.quorum_sit_out = M > 0, gang recovery): at a meeting the members plan
//    which of them sit out the next sync points (core/quorum_rule.h sitting_out: slower than
//    the quorum, a fast owner for its slice), each up to M of them and never one that
//    `whole_group_at` names (a checkpoint, an evaluation, the last step). Every member derives
//    the same plan from the meeting; the lowest publishes it (QuorumGate::publish_plan). At a
//    sync point the group in use is its members not sitting out (Collectives::narrow), until
//    the next one. A rank sitting out (sitting_out()) neither meets nor syncs nor votes: it
//    trains on, skipping ahead as needed to be at its return point in time, and there, after
//    reading who else is out, it takes each fragment synchronised meanwhile — θ and momentum —
//    from a member that stayed in (OuterOptimizer::catch_up), its work on it merged with a
//    weight of late_work_weight or dropped (outer.quorum_late_work). θ is one value per sync
//    point among the members in, and every rank's again when it rejoins.
//  - summary(): the summary's outer_sync block; the metrics are counted as it goes.
// Training thread only; the parts are given by reference and outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/quorum_rule.h"
#include "core/run_summary.h"
#include "core/streaming_schedule.h"
#include "engine/comm/collectives.h"
#include "engine/train/live_recovery.h"
#include "engine/train/quorum_close_watch.h"
#include "engine/train/quorum_gate.h"
#include "engine/train/run_parts.h"

namespace ppu {

class QuorumSync {
 public:
  // `live_recovery`: null without live recovery. `whole_group_at(step)`: whether every member
  // must be in at the sync point after inner step `step` (collectives of the whole group follow
  // before the next: a checkpoint, an evaluation; the last step always is).
  QuorumSync(const Config& config, const StreamingSchedule& schedule, Collectives& collectives, RunParts run,
             LiveRecovery* live_recovery, std::function<bool(int64_t)> whole_group_at = {});
  QuorumSync(const QuorumSync&) = delete;
  QuorumSync& operator=(const QuorumSync&) = delete;

  // Where the fragments' windows stand at `step`, where the run starts (0, a resume) or a
  // replacement rejoined (`replacement`: it trained none of them).
  void start(int64_t step, bool replacement);
  bool skips(int64_t step);
  void stepped(bool trained);
  void meet(int64_t step);
  // This rank sat out the last sync point (it skips that sync point's outer steps and the round
  // boundary's collectives, and trains on).
  bool sitting_out() const { return sitting_out_; }
  // Notices while sitting out (gang recovery; docs/QUORUM_SYNC.md): a rank sitting out that had
  // a notice says so at each sync point it sits out, and leaves (LeftOnNotice) once the members
  // stopped the job. The members ask away_with_notice() at their round boundary's vote (the
  // ranks sitting out now that said so: they leave as members that voted so do) and call
  // job_stops() when the job stops on a notice, after its checkpoint.
  std::vector<int> away_with_notice();
  void job_stops();
  void weigh(int fragment);
  OuterSyncSummary summary() const;

 private:
  // Sync points: after an inner step with fragments due, and the last step.
  bool is_sync_point(int64_t step) const;
  int64_t previous_sync_point(int64_t step) const;  // the last before `step` (0: none)
  int64_t next_sync_point(int64_t step) const;      // the first after `step`
  // The first sync point after inner step `step` at which this rank is in (not sitting out).
  int64_t next_meeting(int64_t step) const;
  // Sitting out: whether job rank `rank` is out at sync point `step`; the members in there.
  bool out_at(int rank, int64_t step) const;
  std::vector<int> in_at(int64_t step) const;
  void read_plan(int64_t step);
  void publish_plan(int64_t step);
  // At a meeting: the sitting out from the next sync point on, planned from every member's pace.
  // `slow_before`: by member, the meetings in a row before this one it was found slow at.
  void plan_sit_outs(int64_t step, const std::vector<double>& step_s, const std::vector<int>& slow_before);
  // Fragment `fragment`'s last outer step at or before inner step `step` (0: none yet).
  int64_t last_outer_step(int fragment, int64_t step) const;
  // Fragments with an outer step at a sync point in [from, until), ascending, with how many each.
  std::map<int, int64_t> synced_between(int64_t from, int64_t until) const;
  // A rank that rejoins at `step`: its windows of the fragments it missed, before the meeting.
  void rejoin_windows(int64_t step);
  // After the meeting: θ and momentum of the fragments a rank rejoining here missed.
  void catch_up(int64_t step);
  bool decide_skip(int64_t step);
  // A rank sitting out at sync point `step` with a notice: says so, and leaves if the job stopped.
  void away_on_notice(int64_t step);
  [[noreturn]] void leave_on_notice(int64_t step, const std::string& why);
  double own_step_s() const;  // this rank's seconds a trained step lately (0: none yet)

  const Config& config_;
  const StreamingSchedule& schedule_;
  Collectives& collectives_;
  RunParts run_;
  LiveRecovery* live_recovery_;
  QuorumGate gate_;
  QuorumCloseWatch close_watch_;
  GraceWindow grace_;
  FragmentWindows windows_;
  int slices_;
  int64_t steps_trained_ = 0;
  int64_t heading_for_ = -1;                               // the sync point this rank trains towards (cached)
  int64_t heading_from_ = 0;                               // the step its interval began at
  std::chrono::steady_clock::time_point heading_since_{};  // and when
  std::chrono::steady_clock::time_point last_step_at_{};   // the last skips() call
  double fastest_step_s_ = 0;                             // the fastest member's pace in the last interval (0: unknown)
  bool skipping_ = false;                                 // it has closed (or will before a step could end): skip to it
  bool skipping_ahead_ = false;                           // ... and this rank decided so before the close
  int ahead_streak_ = 0;                                  // intervals in a row it skipped ahead in
  AheadRule ahead_;                                       // from the last meeting
  std::vector<double> recent_steps_s_;                    // this rank's last trained steps' seconds (own_step_s)
  std::chrono::steady_clock::time_point step_started_{};  // when skips() let the current step go
  std::vector<double> weights_;                           // the last meeting's: [fragment][job rank], flattened
  std::map<int, double> tokens_, weight_sum_;             // by job rank: trained tokens, weights over outer steps
  std::map<int, double> slice_weight_sum_;                // by slice: its owners' weights over outer steps
  std::function<bool(int64_t)> whole_group_at_;
  struct SitOut {
    int64_t from = 0, until = 0;  // the sync points [from, until) sat out
  };
  std::map<int, SitOut> plan_;  // by job rank: who sits out, as far as this rank knows
  std::vector<int> members_;    // the whole group's
  bool sitting_out_ = false;
  int64_t last_sync_point_ = 0;  // the last sync point this rank met or sat out
  bool notice_said_ = false;     // away_on_notice said so
  int slow_meetings_ = 0;        // meetings in a row this rank was found slow at (slow_members)
  OuterSyncSummary summary_;
};

}  // namespace ppu
