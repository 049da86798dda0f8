// What each stop or loss costs in rounds (core/interruptions.h): the history a run leaves in the
// checkpoint directory, the stop the next run records from it, and the live group's losses with
// the rounds they left the job degraded.
#include "core/interruptions.h"

#include <gtest/gtest.h>

namespace ppu {
namespace {

JobHistory reached(int64_t round, int64_t lost = 0) {
  JobHistory h;
  h.reached_round = round;
  h.rounds_lost = lost;
  return h;
}

TEST(Interruptions, AStopCostsTheRoundsBetweenWhereTheJobGotAndWhereTheNextRunResumed) {
  const JobHistory h = after_stop(reached(73), 50, interruption_kind::kRestart);
  ASSERT_EQ(h.stops.size(), 1u);
  EXPECT_EQ(h.stops[0].round, 73);
  EXPECT_EQ(h.stops[0].resumed_round, 50);
  EXPECT_EQ(h.stops[0].rounds_lost, 23);
  EXPECT_EQ(h.stops[0].kind, "restart");
  EXPECT_EQ(h.rounds_lost, 23);
  EXPECT_EQ(h.reached_round, 73) << "until the resumed run passes its first boundary";
}

TEST(Interruptions, AStopAtTheCheckpointItResumesFromCostsNothingAndIsStillRecorded) {
  const JobHistory h = after_stop(reached(16), 16, interruption_kind::kNotice);
  ASSERT_EQ(h.stops.size(), 1u);
  EXPECT_EQ(h.stops[0].rounds_lost, 0);
  EXPECT_EQ(h.stops[0].kind, "notice");
  EXPECT_EQ(h.stop_count, 1);
  EXPECT_EQ(h.rounds_lost, 0);
  const JobHistory first = after_stop(std::nullopt, 0, interruption_kind::kRestart);
  EXPECT_TRUE(first.stops.empty()) << "a job's first run follows no stop";
  EXPECT_EQ(first.stop_count, 0);
}

TEST(Interruptions, AJobThatLeftNoCheckpointLosesEverythingItHadReached) {
  const JobHistory h = after_stop(reached(3), 0, interruption_kind::kRestart);
  ASSERT_EQ(h.stops.size(), 1u);
  EXPECT_EQ(h.stops[0].rounds_lost, 3);
}

TEST(Interruptions, StopsAddUpOverTheJobsLifeThroughTheNote) {
  // Stopped at 73 (checkpoint 50), then again at 60 before the next checkpoint: 23 + 10.
  JobHistory h = after_stop(reached(73), 50, interruption_kind::kRestart);
  h.reached_round = 60;
  const JobHistory again = after_stop(from_note(nlohmann::json::parse(to_note(h).dump())), 50, "fallback");
  EXPECT_EQ(again.rounds_lost, 33);
  EXPECT_EQ(again.stop_count, 2);
  ASSERT_EQ(again.stops.size(), 2u);
  EXPECT_EQ(again.stops[1].rounds_lost, 10);
  EXPECT_EQ(again.stops[1].kind, "fallback");
}

TEST(Interruptions, TheNoteKeepsTheLastStopsAndTheWholeTotal) {
  JobHistory h;
  for (int i = 0; i < 40; ++i) {
    h.reached_round += 5;
    h = after_stop(h, h.reached_round - 2, interruption_kind::kRestart);
  }
  EXPECT_EQ(h.stops.size(), JobHistory::kMaxStopsKept);
  EXPECT_EQ(h.rounds_lost, 80) << "the total counts the stops no longer listed";
  EXPECT_EQ(h.stop_count, 40);
  EXPECT_EQ(h.stops.back().round, 200);
}

TEST(Interruptions, AMalformedNoteIsAnError) {
  EXPECT_THROW(from_note(nlohmann::json::parse(R"({"reached_round": 4})")), nlohmann::json::exception);
  EXPECT_THROW(from_note(nlohmann::json::parse(R"({"reached_round": "x", "rounds_lost": 0, "stops": []})")),
               nlohmann::json::exception);
}

TEST(Interruptions, ALiveLossCostsNoRoundAndCountsTheRoundsItsRanksWereMissing) {
  RecoverySummary s;
  LiveInterruptions live;
  live.lost(s, 5, "killed", {1});
  live.round_end(s, {1});  // round 5 finished without rank 1
  live.round_end(s, {1});
  live.lost(s, 7, "preempted", {2, 3});
  live.round_end(s, {1, 2, 3});
  live.round_end(s, {3});  // 1 and 2 are back
  live.round_end(s, {});
  live.round_end(s, {1});  // rank 1 missing again without a new loss recorded: the first is closed
  ASSERT_EQ(s.interruptions.size(), 2u);
  EXPECT_EQ(s.interruptions[0].rounds_lost, 0);
  EXPECT_EQ(s.interruptions[0].resumed_round, 5);
  EXPECT_EQ(s.interruptions[0].rounds_degraded, 3);
  EXPECT_EQ(s.interruptions[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.interruptions[1].rounds_degraded, 2) << "open while any of its ranks is missing";
}

}  // namespace
}  // namespace ppu
