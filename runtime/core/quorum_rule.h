// Quorum sync's rules (outer.sync_mode = quorum, docs/QUORUM_SYNC.md), apart from the store
// that carries them between the ranks (engine/train/quorum_gate.h). Pure and deterministic:
// every rank that feeds them the same numbers gets the same answers.
//  - quorum_size: how many of a group's members must arrive at a sync point before its grace
//    window starts: ceil(fraction x members), at least one, at most every member.
//  - GraceWindow: how long a sync point stays open after its quorum arrived: 2 x the median,
//    over the last 8 sync points, of the quorum's spread (seconds from the first arrival to the
//    quorum-th), within [min_s, max_s]; max_s until a spread is known.
//  - quorum_spread: that spread, from every member's wait at one sync point (seconds from its
//    arrival to the close, the same close for all): the waits sorted from the longest, first
//    minus quorum-th.
//  - fastest_step_seconds: the fastest member's seconds an inner step over the last interval
//    between sync points, from every member's seconds from leaving the previous meeting to
//    arriving at this one (they leave a meeting together) and the interval's steps; 0 when
//    unknown. A sync point cannot close before a quorum trained to it, so a rank need not ask
//    whether it closed before a fraction of that pace (QuorumSync::skips).
//  - AheadRule: whether a rank may skip an inner step *before* its sync point closed, because
//    it predicts the step would end after the close (QuorumSync::skips): only a rank slower
//    than the quorum's pace (kSlowerThanQuorum x the quorum-th fastest member's seconds a
//    trained step) whose slice has another owner at least as fast (skipping must not leave a
//    slice without an update: the gate waits for an owner of every slice anyway). The close it
//    predicts is the interval's steps at the quorum's pace plus the grace window: the members
//    wait that long for late arrivals anyway, so a step that ends inside it costs them nothing
//    they did not agree to. Every member's seconds a step come from the meeting (the median of
//    its last few trained steps; 0: it has not trained yet, unknown).
//  - slow_members: the members of a meeting AheadRule would let skip ahead at
//    kSitsOutSlowerThanQuorum (twice the quorum's pace, their slice trained by a member at that
//    pace). sitting_out: which of them sit out the next sync points (outer.quorum_sit_out):
//    those also slow at the kSitOutAfter - 1 meetings before (`slow_before`, by position: each
//    member counts its own and reports it), the slowest first, while at least `quorum` members
//    stay in — a rank throttled for good, not one descheduled for a moment. The
//    fast owner of each one's slice is not slow, so every slice keeps an owner.
//  - late_work_weight: the weight, in steps, of a rank's work on a fragment whose outer steps it
//    sat out (outer.quorum_late_work merge): its trained steps / (1 + the outer steps it missed).
//  - FragmentWindows: each fragment's window (the inner steps since its last outer step) and
//    how many of them this rank trained; weight(f) = trained / window, exactly 1 for a rank that
//    trained every step (the weight of its delta in the fragment's outer step).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace ppu {

int quorum_size(double fraction, int members);

double quorum_spread(std::vector<double> waits, int quorum);

double fastest_step_seconds(const std::vector<double>& train_s, int64_t steps);

struct AheadRule {
  static constexpr double kSlowerThanQuorum = 1.5;
  // Sitting out costs a rank more (its work waits and weighs less) than a skipped step: it
  // takes twice the quorum's pace, not jitter on a crowded machine.
  static constexpr double kSitsOutSlowerThanQuorum = 2.0;
  double quorum_step_s = 0;  // the quorum-th fastest member's seconds a trained step (0: unknown)
  bool allowed = false;      // this rank may skip ahead
  // From every member's seconds a trained step (`step_s`, by position; 0 unknown) and job rank
  // (`ranks`, same positions), the quorum's size, the slices and this rank.
  // `slower`: how many times the quorum's pace makes a rank slow.
  static AheadRule from_meeting(const std::vector<double>& step_s, const std::vector<int>& ranks, int quorum,
                                int slices, int job_rank, double slower = kSlowerThanQuorum);
  // Whether a step that takes `own_step_s` and starts `elapsed_s` into an interval of `steps`
  // steps ends after the predicted close (`grace_s` after the quorum trained them).
  bool finishes_late(double elapsed_s, double own_step_s, int64_t steps, double grace_s) const;
};

// Job ranks, ascending; `step_s` and `ranks` by position as in AheadRule::from_meeting.
std::vector<int> slow_members(const std::vector<double>& step_s, const std::vector<int>& ranks, int quorum, int slices);
constexpr int kSitOutAfter = 3;  // meetings in a row a member must be slow at
std::vector<int> sitting_out(const std::vector<double>& step_s, const std::vector<int>& ranks, int quorum, int slices,
                             const std::vector<int>& slow_before);

double late_work_weight(int64_t trained, int64_t missed_outer_steps);

class GraceWindow {
 public:
  GraceWindow(double min_s, double max_s) : min_s_(min_s), max_s_(max_s) {}
  double seconds() const;
  void observe(double spread_s);

 private:
  double min_s_, max_s_;
  std::deque<double> spreads_;  // the last kHistory
  static constexpr std::size_t kHistory = 8;
};

class FragmentWindows {
 public:
  explicit FragmentWindows(int fragments) : window_(fragments, 0), trained_(fragments, 0), late_(fragments, 0) {}
  // Where fragment `fragment`'s window stands when a run starts mid-window: `elapsed` steps
  // since its last outer step, `trained` of them by this rank (a resumed rank: all, its local
  // parameters hold them; a replacement: none, it took θ). `late`: steps' worth of work from
  // before the window that its delta carries (a rank that sat out the fragment's outer steps
  // and merged its work: late_work_weight), added to its trained steps in weight().
  void start(int fragment, int64_t elapsed, int64_t trained, double late = 0);
  void step(bool trained);    // one inner step of every window, trained or skipped
  void synced(int fragment);  // the fragment's outer step: its window starts again
  double weight(int fragment) const;
  int64_t trained(int fragment) const { return trained_.at(fragment); }

 private:
  std::vector<int64_t> window_, trained_;
  std::vector<double> late_;
};

}  // namespace ppu
