// Quorum sync's pure rules (core/quorum_rule.h): the quorum's size, the spread of its arrivals,
// the grace window adapted from them, and each fragment's window and weight.
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

}  // namespace
}  // namespace ppu
