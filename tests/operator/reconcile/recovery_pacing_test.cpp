// Unit tests of recovery pacing (recovery live; operator/src/reconcile/recovery_pacing.h and its
// use in policy_recovery.cpp): the back-off of a rank lost again within the window (0 for its
// first loss, then base * 2^(n-2), capped), held as a requeue and never as a creation, a pure
// function of status and the time (so it survives an operator restart); the budget of
// spec.runPolicy.maxRecoveries per recoveryWindowSeconds, whose old recoveries expire, and the
// lifetime count when the window is 0; status.recoveries stays the lifetime total.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reconcile/job_constants.h"
#include "reconcile/reconciler.h"
#include "reconcile/recovery_pacing.h"
#include "reconcile/rendezvous.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::at;
using testing::count_events;
using testing::created_pods;
using testing::deleted_pods;
using testing::gang;
using testing::has_event;
using testing::kNow;
using testing::make_job;
using testing::new_status;
using testing::observed;
using testing::observed_live;
using testing::running_status;
using testing::status_after;
using testing::with_exit;

RunPolicy policy(int64_t base = 10, int64_t max = 300, int64_t window = 3600) {
  RunPolicy rp;
  rp.recovery_backoff_seconds = base;
  rp.recovery_backoff_max_seconds = max;
  rp.recovery_window_seconds = window;
  return rp;
}

std::vector<RecoveryRecord> records(std::initializer_list<std::pair<int64_t, int64_t>> rank_and_offset) {
  std::vector<RecoveryRecord> out;
  for (const auto& [rank, offset] : rank_and_offset) out.push_back(RecoveryRecord{rank, at(offset)});
  return out;
}

json history(std::initializer_list<std::pair<int64_t, int64_t>> rank_and_offset) {
  json out = json::array();
  for (const auto& r : records(rank_and_offset)) out.push_back(r);
  return out;
}

json live_job(json status = running_status(0), json run_policy = json::object()) {
  json job = make_job("demo", 4, std::move(status));
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  for (const auto& [k, v] : run_policy.items()) job["spec"]["runPolicy"][k] = v;
  return job;
}

// ---- the rules ----

TEST(RecoveryPacing, AFirstLossIsFreeThenTheWaitDoublesUpToTheCap) {
  const RunPolicy rp = policy();
  const std::vector<int64_t> expected = {0, 10, 20, 40, 80, 160, 300, 300};
  for (size_t n = 1; n <= expected.size(); ++n) EXPECT_EQ(recovery_backoff(n, rp), expected[n - 1]) << "loss " << n;
  EXPECT_EQ(recovery_backoff(1000, rp), 300) << "no overflow far past the cap";
  EXPECT_EQ(recovery_backoff(0, rp), 0);
  EXPECT_EQ(recovery_backoff(5, policy(0)), 0) << "recoveryBackoffSeconds 0: no back-off";
  EXPECT_EQ(recovery_backoff(3, policy(1, 4)), 2);
  EXPECT_EQ(recovery_backoff(9, policy(1, 4)), 4);
  EXPECT_EQ(recovery_backoff(2, policy(30, 20)), 20) << "a cap below the base caps the base";
}

TEST(RecoveryPacing, TheWindowKeepsTheRecentRecordsOldestFirst) {
  const auto history = records({{3, -10}, {1, -4000}, {2, -3600}, {0, -3599}});
  const auto kept = in_window(history, kNow, 3600);
  ASSERT_EQ(kept.size(), 2u) << "-4000 s and exactly -3600 s are out of the last 3600 s";
  EXPECT_EQ(kept[0].rank, 0);
  EXPECT_EQ(kept[1].rank, 3);
  EXPECT_EQ(in_window(history, kNow, 0).size(), 4u) << "window 0: the job's lifetime";
  EXPECT_TRUE(in_window({RecoveryRecord{1, "yesterday"}}, kNow, 0).empty()) << "an unreadable time is dropped";

  std::vector<RecoveryRecord> many;
  for (size_t i = 0; i < kRecoveryHistoryMax + 5; ++i) many.push_back(RecoveryRecord{1, at(-static_cast<int64_t>(i))});
  const auto capped = in_window(many, kNow, 0);
  ASSERT_EQ(capped.size(), kRecoveryHistoryMax);
  EXPECT_EQ(capped.back().time, at(0)) << "the newest are kept";
}

TEST(RecoveryPacing, AttemptsCountOnlyThatRankAndTheBudgetItsWindow) {
  const auto w = records({{2, -100}, {1, -50}, {2, -10}});
  EXPECT_EQ(loss_attempt(w, 2), 3);
  EXPECT_EQ(loss_attempt(w, 1), 2);
  EXPECT_EQ(loss_attempt(w, 0), 1);
  EXPECT_EQ(loss_events(w), 2) << "-100 s opens an event, -50 s is of it, -10 s opens the next";
}

// What capacity does at once is one event: the pods of one node, lost over some seconds.
TEST(RecoveryPacing, LossesWithinAMinuteOfAnEventsFirstAreThatEvent) {
  EXPECT_EQ(loss_events({}), 0);
  EXPECT_EQ(loss_events(records({{0, -5}, {1, -5}, {2, -4}, {3, -4}, {4, -3}, {5, -3}, {6, -1}, {7, 0}})), 1)
      << "a node of 8 ranks";
  EXPECT_EQ(loss_events(records({{0, -200}, {1, -200 + kLossEventSeconds}, {2, -200 + kLossEventSeconds + 1}})), 2)
      << "the window is counted from an event's first loss, not chained";
  EXPECT_EQ(loss_events(records({{0, -300}, {0, -200}, {0, -100}})), 3) << "a rank that keeps failing";
  EXPECT_EQ(loss_events({RecoveryRecord{1, "yesterday"}}), 0);
}

TEST(RecoveryPacing, ANodesRanksLostTogetherCostOneOfTheBudget) {
  json st = running_status(0);
  st["recentRecoveries"] = history({{5, -500}});
  json job = live_job(st, {{"maxRecoveries", 2}, {"recoveryWindowSeconds", 3600}});
  job["spec"]["replicas"] = 8;
  std::vector<json> pods = gang(job, 8, "Running");
  for (int r : {0, 2, 4, 6}) pods[r] = with_exit(pods[r], 137, "");  // one node's ranks
  const Decision d = reconcile(observed_live(job, pods));
  const json after = *new_status(d);
  EXPECT_EQ(after["phase"], phase::kRunning) << after.dump();
  EXPECT_EQ(after["recoveries"], 4) << "status.recoveries counts pods";
  EXPECT_EQ(after["recentRecoveries"].size(), 5u);
  EXPECT_EQ(deleted_pods(d).size(), 4u);
  bool named = false;
  for (const auto& e : actions_of<RecordEvent>(d))
    named = named || e.message.find("loss event 2 of 2 in the last 3600 s") != std::string::npos;
  EXPECT_TRUE(named) << "the four losses are the budget's second event";

  // A third event past the budget: a gang restart from the checkpoint, not Failed.
  job["status"] = after;
  job["status"]["recentRecoveries"] = history({{5, -500}, {0, -200}, {2, -200}, {4, -199}, {6, -199}});
  std::vector<json> again = gang(job, 8, "Running");
  again[3] = with_exit(again[3], 1, "oom");
  const Decision r = reconcile(observed_live(job, again));
  const json restarted = *new_status(r);
  EXPECT_EQ(restarted["phase"], phase::kRestarting) << restarted.dump();
  EXPECT_EQ(restarted["restartCount"], 1);
  EXPECT_EQ(count_events(r, reason::kRecoveryLimitExceeded), 1);
  EXPECT_EQ(deleted_pods(r).size(), 9u) << "every rank and the store";
}

// ---- back-off in reconcile ----

TEST(RecoveryPacing, ARankLostAgainWaitsForItsBackoffAndOnlyThatRank) {
  json st = running_status(0);
  st["recoveries"] = 1;
  st["recentRecoveries"] = history({{2, -30}});  // rank 2 lost 30 s ago, and replaced since
  json job = live_job(st);
  std::vector<json> pods = gang(job, 4, "Running");
  pods[2] = with_exit(pods[2], 1, "crashed at start");
  pods.erase(pods.begin() + 1);  // rank 1: its first loss
  Observed in = observed_live(job, pods);

  Decision d = reconcile(in);
  EXPECT_EQ(created_pods(d), std::vector<std::string>{"demo-rank-1"}) << "a first loss is recreated at once";
  EXPECT_EQ(d.recovery_backoffs, 1);
  EXPECT_EQ(count_events(d, reason::kRankRecoveryBackoff), 1);
  const json after = *new_status(d);
  EXPECT_EQ(after["recoveries"], 3);
  const json expected_rank2 = {
      {"rank", 2}, {"podUID", "pod-2"}, {"lostTime", at(0)}, {"attempt", 2}, {"recreateAfter", at(10)}};
  EXPECT_EQ(after["recoveringRanks"],
            json::array({{{"rank", 1}, {"podUID", ""}, {"lostTime", at(0)}, {"attempt", 1}}, expected_rank2}))
      << after.dump();
  EXPECT_EQ(after["recentRecoveries"], history({{2, -30}, {1, 0}, {2, 0}}));
  EXPECT_DOUBLE_EQ(d.requeue_after_s, 10) << "requeued for when the back-off ends";

  // Rank 2's pod is gone, rank 1's replacement is seen: rank 2 is held, not created.
  in.job["status"] = after;
  in.pods = gang(job, 4, "Running");
  in.pods[1]["metadata"]["uid"] = "pod-1-b";
  in.pods.erase(in.pods.begin() + 2);
  Decision held = reconcile(in);
  EXPECT_TRUE(created_pods(held).empty());
  EXPECT_EQ(held.recovery_backoffs, 0) << "counted once, when the loss was";
  EXPECT_FALSE(has_event(held, reason::kRankRecoveryBackoff));
  EXPECT_DOUBLE_EQ(held.requeue_after_s, 10);

  // An operator restarted 6 s later decides from status alone: still held, 4 s to go.
  Observed later = in;
  later.job["status"] = status_after(in, held);
  later.now = kNow + 6;
  Decision restarted = reconcile(later);
  EXPECT_TRUE(created_pods(restarted).empty());
  EXPECT_DOUBLE_EQ(restarted.requeue_after_s, 4);

  // Once the back-off has passed, the replacement is created, under the same name and rank.
  later.now = kNow + 10;
  Decision due = reconcile(later);
  EXPECT_EQ(created_pods(due), std::vector<std::string>{"demo-rank-2"});
  EXPECT_EQ(status_after(later, due)["recoveries"], 3);
}

TEST(RecoveryPacing, ACrashLoopingRankWaitsLongerEachTime) {
  // Rank 0 lost four times in the last 10 minutes: its fifth loss waits 10 * 2^3 = 80 s.
  json st = running_status(0);
  st["recoveries"] = 4;
  st["recentRecoveries"] = history({{0, -600}, {0, -400}, {0, -200}, {0, -100}});
  json job = live_job(st, {{"maxRecoveries", 20}});
  std::vector<json> pods = gang(job, 4, "Running");
  pods[0] = with_exit(pods[0], 137, "");
  const json after = *new_status(reconcile(observed_live(job, pods)));
  EXPECT_EQ(after["recoveringRanks"][0]["attempt"], 5);
  EXPECT_EQ(after["recoveringRanks"][0]["recreateAfter"], at(80));

  // The same losses spread over more than the window: only those inside it count.
  job["status"]["recentRecoveries"] = history({{0, -9000}, {0, -5000}, {0, -200}, {0, -100}});
  const json spread = *new_status(reconcile(observed_live(job, pods)));
  EXPECT_EQ(spread["recoveringRanks"][0]["attempt"], 3);
  EXPECT_EQ(spread["recoveringRanks"][0]["recreateAfter"], at(20));
}

TEST(RecoveryPacing, AZeroBaseRecreatesAtOnceAndOldEntriesWithoutTimesAreNotHeld) {
  json st = running_status(0);
  st["recentRecoveries"] = history({{3, -5}});
  json job = live_job(st, {{"recoveryBackoffSeconds", 0}});
  std::vector<json> pods = gang(job, 4, "Running");
  pods.erase(pods.begin() + 3);
  Decision d = reconcile(observed_live(job, pods));
  EXPECT_EQ(created_pods(d), std::vector<std::string>{"demo-rank-3"});
  EXPECT_FALSE((*new_status(d))["recoveringRanks"][0].contains("recreateAfter"));

  // An entry an older operator wrote (no lostTime, no recreateAfter) holds nothing.
  json old = running_status(0);
  old["recoveries"] = 1;
  old["recoveringRanks"] = json::parse(R"([{"rank":3,"podUID":""}])");
  Decision o = reconcile(observed_live(live_job(old), pods));
  EXPECT_EQ(created_pods(o), std::vector<std::string>{"demo-rank-3"});
  EXPECT_LT(o.requeue_after_s, 0);
}

// ---- the budget per window ----

TEST(RecoveryPacing, RecoveriesOutsideTheWindowNoLongerCount) {
  json st = running_status(0);
  st["recoveries"] = 5;  // lifetime total
  st["recentRecoveries"] = history({{1, -700}, {2, -650}});
  json job = live_job(st, {{"maxRecoveries", 2}, {"recoveryWindowSeconds", 600}});
  std::vector<json> pods = gang(job, 4, "Running");
  pods[3] = with_exit(pods[3], 1, "oom");
  Decision d = reconcile(observed_live(job, pods));
  const json after = *new_status(d);
  EXPECT_EQ(after["phase"], phase::kRunning) << after.dump();
  EXPECT_EQ(after["recoveries"], 6) << "status.recoveries stays the lifetime total";
  EXPECT_EQ(after["recentRecoveries"], history({{3, 0}})) << "the expired records are dropped";
  bool named = false;
  for (const auto& e : actions_of<RecordEvent>(d))
    named = named || e.message.find("loss event 1 of 2 in the last 600 s") != std::string::npos;
  EXPECT_TRUE(named);

  // Two loss events within the window already: the next loss falls back to a gang restart.
  job["status"]["recentRecoveries"] = history({{1, -300}, {2, -150}});
  const json restarted = *new_status(reconcile(observed_live(job, pods)));
  EXPECT_EQ(restarted["phase"], phase::kRestarting);
  std::string why;
  for (const auto& c : restarted["conditions"])
    if (c["type"] == condition::kRestarting) why = c["message"].get<std::string>();
  EXPECT_NE(why.find("maxRecoveries=2 loss events in the last 600 s exhausted"), std::string::npos) << restarted.dump();
  EXPECT_EQ(restarted["recoveries"], 5);
}

TEST(RecoveryPacing, AWindowOfZeroCountsTheJobsLifetime) {
  json st = running_status(0);
  st["recoveries"] = 2;
  st["recentRecoveries"] = history({{1, -90000}, {2, -50000}});
  json job = live_job(st, {{"maxRecoveries", 2}, {"recoveryWindowSeconds", 0}});
  std::vector<json> pods = gang(job, 4, "Running");
  pods[1] = with_exit(pods[1], 1, "oom");
  const Decision spent = reconcile(observed_live(job, pods));
  EXPECT_EQ((*new_status(spent))["phase"], phase::kRestarting);
  bool lifetime = false;
  for (const auto& e : actions_of<RecordEvent>(spent))
    lifetime = lifetime || (e.reason == reason::kRecoveryLimitExceeded &&
                            e.message.find("over the job's lifetime") != std::string::npos);
  EXPECT_TRUE(lifetime);

  // Under the limit, the lifetime window also paces a rank lost before, however long ago.
  job["spec"]["runPolicy"]["maxRecoveries"] = 3;
  const json paced = *new_status(reconcile(observed_live(job, pods)));
  EXPECT_EQ(paced["phase"], phase::kRunning);
  EXPECT_EQ(paced["recoveringRanks"][0]["attempt"], 2);
  EXPECT_EQ(paced["recentRecoveries"].size(), 3u);
}

}  // namespace
}  // namespace ppu::op
