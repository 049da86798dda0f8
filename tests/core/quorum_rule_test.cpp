// Quorum sync's pure rules (core/quorum_rule.h): the quorum's size, the spread of its arrivals,
// the grace window adapted from them, when a slow rank skips ahead, and each fragment's window
// and weight.
#include "core/quorum_rule.h"

#include <gtest/gtest.h>

namespace ppu {
namespace {

TEST(QuorumRule, QuorumIsTheFractionRoundedUpWithinOneAndEveryMember) {
  EXPECT_EQ(quorum_size(0.75, 4), 3);
  EXPECT_EQ(quorum_size(0.75, 8), 6);
  EXPECT_EQ(quorum_size(0.75, 7), 6);  // 5.25 rounds up
  EXPECT_EQ(quorum_size(0.5, 4), 2);   // exactly half: no rounding up past it
  EXPECT_EQ(quorum_size(0.0, 4), 1);
  EXPECT_EQ(quorum_size(1.0, 4), 4);
  EXPECT_EQ(quorum_size(0.75, 1), 1);
}

TEST(QuorumRule, SpreadIsFromTheFirstArrivalToTheQuorumth) {
  // Waits until one close: the rank that waited 2.0 s arrived first, 0.0 s last.
  EXPECT_DOUBLE_EQ(quorum_spread({0.5, 2.0, 0.0, 1.5}, 3), 1.5);  // 2.0 - 0.5
  EXPECT_DOUBLE_EQ(quorum_spread({0.5, 2.0, 0.0, 1.5}, 1), 0.0);
  EXPECT_DOUBLE_EQ(quorum_spread({0.5, 2.0, 0.0, 1.5}, 9), 2.0);  // at most every member
  EXPECT_DOUBLE_EQ(quorum_spread({}, 3), 0.0);
}

TEST(QuorumRule, TheSoonestCloseFollowsTheFastestMembersPace) {
  EXPECT_DOUBLE_EQ(fastest_step_seconds({3.0, 1.5, 2.0}, 10), 0.15) << "the fastest of the members";
  EXPECT_DOUBLE_EQ(fastest_step_seconds({3.0}, 10), 0.3);
  EXPECT_DOUBLE_EQ(fastest_step_seconds({}, 10), 0.0) << "no member known: no pace";
  EXPECT_DOUBLE_EQ(fastest_step_seconds({1.0}, 0), 0.0) << "no steps: no pace";
}

// K = 4, N = 2: slice 0 is ranks 0 and 2, slice 1 ranks 1 and 3; a quorum of 3.
TEST(QuorumRule, OnlyARankSlowerThanTheQuorumWithAFastCoOwnerSkipsAhead) {
  const std::vector<int> ranks{0, 1, 2, 3};
  const std::vector<double> one_slow{0.03, 0.032, 0.031, 0.3};  // rank 3 ten times slower
  const auto slow = AheadRule::from_meeting(one_slow, ranks, 3, 2, 3);
  EXPECT_DOUBLE_EQ(slow.quorum_step_s, 0.032) << "the third fastest";
  EXPECT_TRUE(slow.allowed) << "rank 1 trains slice 1 at the quorum's pace";
  EXPECT_FALSE(AheadRule::from_meeting(one_slow, ranks, 3, 2, 1).allowed) << "a rank at the quorum's pace";
  EXPECT_FALSE(AheadRule::from_meeting({0.03, 0.3, 0.031, 0.3}, ranks, 2, 2, 3).allowed)
      << "slice 1's other owner is as slow: the gate waits for one of them, skipping would lose the slice's update";
  EXPECT_FALSE(AheadRule::from_meeting({0.03, 0.032, 0.031, 0.04}, ranks, 3, 2, 3).allowed)
      << "25 % slower is jitter, not a straggler";
}

TEST(QuorumRule, WithoutTheQuorumsPaceNobodySkipsAhead) {
  const std::vector<int> ranks{0, 1, 2, 3};
  const auto rule = AheadRule::from_meeting({0.03, 0, 0, 0.3}, ranks, 3, 2, 3);  // two have not trained yet
  EXPECT_DOUBLE_EQ(rule.quorum_step_s, 0.0);
  EXPECT_FALSE(rule.allowed);
  EXPECT_FALSE(rule.finishes_late(100, 100, 5, 0));
}

TEST(QuorumRule, AStepEndingAfterThePredictedCloseIsLate) {
  const auto rule = AheadRule::from_meeting({0.03, 0.03, 0.03, 0.3}, {0, 1, 2, 3}, 3, 2, 3);
  // 5 steps at 0.03 s, then a 0.1 s grace: the close is predicted at 0.25 s.
  EXPECT_TRUE(rule.finishes_late(0.0, 0.3, 5, 0.1)) << "a 0.3 s step cannot fit";
  EXPECT_FALSE(rule.finishes_late(0.0, 0.2, 5, 0.1));
  EXPECT_TRUE(rule.finishes_late(0.1, 0.2, 5, 0.1)) << "one that no longer fits";
  EXPECT_FALSE(rule.finishes_late(0.0, 0.3, 5, 60)) << "a long grace window leaves room";
  EXPECT_FALSE(AheadRule::from_meeting({0.03, 0.03, 0.03, 0.3}, {0, 1, 2, 3}, 3, 2, 1).finishes_late(0.5, 0.03, 5, 0))
      << "a rank at the quorum's pace never skips ahead, however late";
}

TEST(QuorumRule, GraceIsTwiceTheMedianSpreadOfTheLastEightWithinItsBounds) {
  GraceWindow grace(0.1, 5.0);
  EXPECT_DOUBLE_EQ(grace.seconds(), 5.0) << "before any spread: the ceiling";
  grace.observe(0.3);
  EXPECT_DOUBLE_EQ(grace.seconds(), 0.6);
  grace.observe(0.01);
  grace.observe(0.02);
  EXPECT_DOUBLE_EQ(grace.seconds(), 0.1) << "2 x median 0.02 = 0.04: the floor";
  for (int i = 0; i < 8; ++i) grace.observe(10.0);
  EXPECT_DOUBLE_EQ(grace.seconds(), 5.0) << "the ceiling; and the small spreads have left the window";
  for (int i = 0; i < 5; ++i) grace.observe(1.0);
  EXPECT_DOUBLE_EQ(grace.seconds(), 2.0) << "median of 3 x 10 and 5 x 1";
}

TEST(QuorumRule, AWindowTrainedInFullWeighsExactlyOne) {
  FragmentWindows windows(2);
  for (int i = 0; i < 7; ++i) windows.step(true);
  EXPECT_EQ(windows.weight(0), 1.0);
  windows.synced(0);
  EXPECT_EQ(windows.weight(0), 1.0) << "an empty window";
  windows.step(true);
  windows.step(false);
  windows.step(false);
  windows.step(true);
  EXPECT_DOUBLE_EQ(windows.weight(0), 0.5);
  EXPECT_DOUBLE_EQ(windows.weight(1), 9.0 / 11.0);
  EXPECT_EQ(windows.trained(1), 9);
}

TEST(QuorumRule, AReplacementStartsWithTheElapsedWindowUntrained) {
  FragmentWindows windows(1);
  windows.start(0, 6, 0);  // rejoined 6 steps after the fragment's last outer step
  for (int i = 0; i < 2; ++i) windows.step(true);
  EXPECT_DOUBLE_EQ(windows.weight(0), 0.25);
  windows.start(0, 6, 6);  // a resumed rank: its local parameters hold those steps
  windows.step(true);
  EXPECT_EQ(windows.weight(0), 1.0);
}

// K = 8, N = 2 (slice 0: even ranks, slice 1: odd), a quorum of 6; every member slow at the
// meetings before unless said.
TEST(QuorumRule, TheSlowestWithAFastCoOwnerSitOutWhileAQuorumStaysIn) {
  const std::vector<int> ranks{0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int> before(8, kSitOutAfter - 1);
  EXPECT_EQ(sitting_out({0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.3}, ranks, 6, 2, before), std::vector<int>{7});
  EXPECT_EQ(sitting_out({0.03, 0.03, 0.03, 0.03, 0.2, 0.03, 0.03, 0.3}, ranks, 6, 2, before), (std::vector<int>{4, 7}))
      << "two slow ranks";
  EXPECT_TRUE(sitting_out({0.03, 0.03, 0.25, 0.03, 0.2, 0.03, 0.03, 0.3}, ranks, 6, 2, before).empty())
      << "three slow ranks and a quorum of 6: the quorum's own pace is slow, nobody is slower than it";
  EXPECT_EQ(sitting_out({0.03, 0.03, 0.25, 0.03, 0.2, 0.03, 0.03, 0.3}, ranks, 5, 2, before),
            (std::vector<int>{2, 4, 7}))
      << "the same with a quorum of 5";
  EXPECT_TRUE(sitting_out({0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.055}, ranks, 6, 2, before).empty())
      << "under twice the quorum's pace: it may skip ahead, not sit out";
  EXPECT_TRUE(AheadRule::from_meeting({0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.055}, ranks, 6, 2, 7).allowed);
  EXPECT_TRUE(sitting_out({0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.3}, ranks, 8, 2, before).empty())
      << "a quorum of every member leaves no room";
  EXPECT_TRUE(sitting_out({0.03, 0.3}, {0, 1}, 1, 2, {2, 2}).empty()) << "rank 1 is the only owner of slice 1";
  auto once = before;
  once[7] = kSitOutAfter - 2;
  EXPECT_TRUE(sitting_out({0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.3}, ranks, 6, 2, once).empty())
      << "slow at too few meetings in a row: a moment, not a straggler";
  EXPECT_EQ(slow_members({0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.3}, ranks, 6, 2), std::vector<int>{7})
      << "what it counts towards the next meeting";
}

TEST(QuorumRule, LateWorkWeighsItsStepsOverOnePlusTheOuterStepsMissed) {
  EXPECT_DOUBLE_EQ(late_work_weight(12, 0), 12.0);
  EXPECT_DOUBLE_EQ(late_work_weight(12, 2), 4.0);
  EXPECT_DOUBLE_EQ(late_work_weight(0, 3), 0.0);
  FragmentWindows windows(1);
  windows.start(0, 10, 0, late_work_weight(12, 2));  // rejoined 10 steps after an outer step it missed
  EXPECT_DOUBLE_EQ(windows.weight(0), 0.4);
  for (int i = 0; i < 10; ++i) windows.step(true);
  EXPECT_DOUBLE_EQ(windows.weight(0), 0.7) << "(10 trained + 4 late) / 20";
  windows.synced(0);
  windows.step(true);
  EXPECT_EQ(windows.weight(0), 1.0) << "the late work entered one outer step";
}

}  // namespace
}  // namespace ppu
