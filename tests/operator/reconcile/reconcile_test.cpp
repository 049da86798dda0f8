// Unit tests of reconcile(): the controller's decisions on hand-built observed states.
#include <gtest/gtest.h>

#include "kube/rfc3339.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::count;
using testing::gang;
using testing::has_event;
using testing::kNow;
using testing::make_job;
using testing::make_pod;
using testing::new_status;
using testing::observed;
using testing::with_exit;

TEST(Reconcile, NewJobCreatesConfigMapServiceAndAllRanks) {
  json job = make_job("demo", 4);
  Decision d = reconcile(observed(job, {}, false));
  ASSERT_FALSE(d.actions.empty());
  EXPECT_TRUE(std::holds_alternative<UpdateStatus>(d.actions.front())) << "status must be written first";
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::ConfigMap), 1);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Service), 1);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::NetworkPolicy), 1);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 4);
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["phase"], "Pending");
  EXPECT_EQ((*st)["restartCount"], 0);
  EXPECT_EQ((*st)["startTime"], format_rfc3339(kNow));
  EXPECT_EQ((*st)["readyString"], "0/4");
  EXPECT_TRUE(has_event(d, "GangCreated"));
}

TEST(Reconcile, IsIdempotentOnceEverythingExists) {
  json job = make_job("demo", 4);
  Decision first = reconcile(observed(job, {}, false));
  ASSERT_TRUE(new_status(first));
  job["status"] = *new_status(first);
  Decision second = reconcile(observed(job, gang(job, 4, "Pending")));
  ASSERT_TRUE(new_status(second)) << "activeRanks went 0 -> 4";
  EXPECT_EQ((*new_status(second))["activeRanks"], 4);
  job["status"] = *new_status(second);
  Decision d = reconcile(observed(job, gang(job, 4, "Pending")));
  EXPECT_EQ(count<CreateObject>(d), 0);
  EXPECT_EQ(count<DeleteObject>(d), 0);
  EXPECT_EQ(count<UpdateStatus>(d), 0) << "no status churn when nothing changed";
}

TEST(Reconcile, PartialGangBeforeStartCreatesOnlyMissingRanks) {
  json job = make_job("demo", 4, {{"phase", "Pending"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 4, "Pending");
  pods.erase(pods.begin() + 2);  // rank 2 not created yet (operator died mid-pass)
  Decision d = reconcile(observed(job, pods));
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 1);
  for (const auto& c : actions_of<CreateObject>(d)) EXPECT_EQ(c.name, "demo-rank-2");
  EXPECT_EQ(count<DeleteObject>(d), 0);
}

TEST(Reconcile, AllRunningMovesToRunning) {
  json job = make_job("demo", 2, {{"phase", "Pending"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  Decision d = reconcile(observed(job, gang(job, 2, "Running")));
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["phase"], "Running");
  EXPECT_EQ((*st)["readyRanks"], 2);
  EXPECT_EQ((*st)["activeRanks"], 2);
  EXPECT_EQ((*st)["readyString"], "2/2");
}

TEST(Reconcile, FailedRankTearsDownTheGangAndCountsARestart) {
  json job = make_job("demo", 4, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 4, "Running");
  pods[1] = with_exit(pods[1], 1, "boom");
  Observed in = observed(job, pods);
  in.options.restart_backoff_s = 10;
  Decision d = reconcile(in);
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["phase"], "Restarting");
  EXPECT_EQ((*st)["restartCount"], 1);
  EXPECT_EQ((*st)["nextRestartTime"], format_rfc3339(kNow + 10));
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 4);
  for (const auto& del : actions_of<DeleteObject>(d))  // only the incarnation we saw, never a newer pod of that name
    EXPECT_EQ(del.uid, "pod-" + del.name.substr(del.name.size() - 1));
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
  EXPECT_TRUE(has_event(d, "GangRestart"));
}

TEST(Reconcile, RestartingWaitsForOldPodsThenBackoffThenRecreates) {
  json job = make_job("demo", 2,
                      {{"phase", "Restarting"},
                       {"restartCount", 1},
                       {"startTime", format_rfc3339(kNow)},
                       {"nextRestartTime", format_rfc3339(kNow + 5)}});
  // Old pods still visible: delete, create nothing.
  auto old = gang(job, 2, "Failed");
  Decision d1 = reconcile(observed(job, old));
  EXPECT_EQ(count<DeleteObject>(d1, ResourceKind::Pod), 2);
  EXPECT_EQ(count<CreateObject>(d1, ResourceKind::Pod), 0);
  // Gone, but back-off not over: wait and requeue at the back-off time.
  Decision d2 = reconcile(observed(job, {}));
  EXPECT_EQ(count<CreateObject>(d2, ResourceKind::Pod), 0);
  EXPECT_DOUBLE_EQ(d2.requeue_after_s, 5);
  // Back-off over: new gang, Pending.
  Observed in = observed(job, {});
  in.now = kNow + 5;
  Decision d3 = reconcile(in);
  EXPECT_EQ(count<CreateObject>(d3, ResourceKind::Pod), 2);
  ASSERT_TRUE(new_status(d3));
  EXPECT_EQ((*new_status(d3))["phase"], "Pending");
  EXPECT_FALSE(new_status(d3)->contains("nextRestartTime"));
}

TEST(Reconcile, TerminatingPodsBlockRecreationUnderTheSameName) {
  json job = make_job("demo", 2, {{"phase", "Restarting"}, {"restartCount", 1}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 1, "Failed");
  pods[0]["metadata"]["deletionTimestamp"] = format_rfc3339(kNow);
  Decision d = reconcile(observed(job, pods));
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 0) << "already being deleted";
}

TEST(Reconcile, BackoffLimitExhaustedFailsTheJob) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 2}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 2, "Running");
  pods[0] = with_exit(pods[0], 3, "peer timeout");
  Decision d = reconcile(observed(job, pods));
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["phase"], "Failed");
  EXPECT_EQ((*st)["restartCount"], 2);
  EXPECT_EQ((*st)["completionTime"], format_rfc3339(kNow));
  EXPECT_TRUE(has_event(d, "BackoffLimitExceeded"));
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 1) << "the still-running rank is removed";
}

TEST(Reconcile, ExitCode2FailsAtOnceWithTheTerminationMessage) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 2, "Running");
  pods[1] = with_exit(pods[1], 2, "config key 'slicing.slices' is 3");
  Decision d = reconcile(observed(job, pods));
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["phase"], "Failed");
  EXPECT_EQ((*st)["restartCount"], 0);
  const json* failed = nullptr;
  for (const auto& c : (*st)["conditions"])
    if (c["type"] == "Failed") failed = &c;
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["reason"], "ConfigurationError");
  EXPECT_NE((*failed)["message"].get<std::string>().find("slicing.slices"), std::string::npos);
}

TEST(Reconcile, ExitCode4FailsAtOnce) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 2, "Running");
  pods[0] = with_exit(pods[0], 4, "no checkpoint");
  Decision d = reconcile(observed(job, pods));
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Failed");
  EXPECT_TRUE(has_event(d, "CheckpointOrDataMissing"));
}

TEST(Reconcile, LostRankAfterStartIsAGangRestart) {
  json job = make_job("demo", 4, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 4, "Running");
  pods.erase(pods.begin());  // deleted by hand / evicted and gone / node lost
  Decision d = reconcile(observed(job, pods));
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Restarting");
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 3);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
}

TEST(Reconcile, EvictedOrUnknownPodIsAFailure) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 2, "Running");
  pods[1]["status"] = {{"phase", "Unknown"}, {"reason", "NodeLost"}};
  Decision d = reconcile(observed(job, pods));
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Restarting");
  bool mentions = false;
  for (const auto& e : actions_of<RecordEvent>(d))
    if (e.reason == "GangRestart") mentions = e.message.find("NodeLost") != std::string::npos;
  EXPECT_TRUE(mentions);
}

TEST(Reconcile, AllSucceededCompletesAndCleanPolicyRunningKeepsPods) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 2, "Running");
  for (auto& p : pods) p = with_exit(p, 0, "");
  Decision d = reconcile(observed(job, pods));
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Succeeded");
  EXPECT_EQ(count<DeleteObject>(d), 0);
}

TEST(Reconcile, CleanPodPolicyAllDeletesFinishedPods) {
  json job =
      make_job("demo", 2, {{"phase", "Succeeded"}, {"restartCount", 0}, {"completionTime", format_rfc3339(kNow)}});
  job["spec"]["runPolicy"]["cleanPodPolicy"] = "All";
  auto pods = gang(job, 2, "Succeeded");
  Decision d = reconcile(observed(job, pods));
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 2);
}

TEST(Reconcile, TtlDeletesTheJobOnlyWhenDue) {
  json job = make_job("demo", 2, {{"phase", "Succeeded"}, {"completionTime", format_rfc3339(kNow - 30)}});
  job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60;
  Decision early = reconcile(observed(job, {}));
  EXPECT_EQ(count<DeletePPUJob>(early), 0);
  EXPECT_DOUBLE_EQ(early.requeue_after_s, 30);
  job["status"]["completionTime"] = format_rfc3339(kNow - 60);
  Decision due = reconcile(observed(job, {}));
  EXPECT_EQ(count<DeletePPUJob>(due), 1);
}

TEST(Reconcile, SuspendDeletesPodsAndResumeRecreates) {
  json job =
      make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow - 100)}});
  job["spec"]["runPolicy"]["suspend"] = true;
  Decision d = reconcile(observed(job, gang(job, 2, "Running")));
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 2);
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Suspended");
  EXPECT_TRUE(has_event(d, "Suspended"));

  job["status"] = *new_status(d);
  job["spec"]["runPolicy"]["suspend"] = false;
  Decision r = reconcile(observed(job, {}));
  EXPECT_EQ(count<CreateObject>(r, ResourceKind::Pod), 2);
  ASSERT_TRUE(new_status(r));
  EXPECT_EQ((*new_status(r))["phase"], "Pending");
  EXPECT_EQ((*new_status(r))["startTime"], format_rfc3339(kNow)) << "the deadline restarts on resume";
  EXPECT_EQ((*new_status(r))["restartCount"], 0) << "a resume is not a failure restart";
}

TEST(Reconcile, ActiveDeadlineFailsWithDeadlineExceeded) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow - 61)}});
  job["spec"]["runPolicy"]["activeDeadlineSeconds"] = 60;
  Decision d = reconcile(observed(job, gang(job, 2, "Running")));
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Failed");
  EXPECT_TRUE(has_event(d, "DeadlineExceeded"));
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 2);

  job["status"]["startTime"] = format_rfc3339(kNow - 10);
  Decision early = reconcile(observed(job, gang(job, 2, "Running")));
  EXPECT_DOUBLE_EQ(early.requeue_after_s, 50);
}

TEST(Reconcile, ExtraRanksAreDeleted) {
  json job = make_job("demo", 2, {{"phase", "Pending"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  auto pods = gang(job, 2, "Pending");
  pods.push_back(make_pod(make_job("demo", 4), 3, "Pending"));
  Decision d = reconcile(observed(job, pods));
  ASSERT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 1);
  for (const auto& del : actions_of<DeleteObject>(d)) EXPECT_EQ(del.name, "demo-rank-3");
}

TEST(Reconcile, ChangedTrainingConfigPatchesTheConfigMap) {
  json job = make_job("demo", 2, {{"phase", "Pending"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  Observed in = observed(job, gang(job, 2, "Pending"));
  job["spec"]["training"]["train"] = {{"steps", 7}};
  in.job = job;
  Decision d = reconcile(in);
  ASSERT_EQ(count<PatchObject>(d, ResourceKind::ConfigMap), 1);
  for (const auto& patch : actions_of<PatchObject>(d))
    EXPECT_NE(patch.patch["data"]["config.yaml"].get<std::string>().find("steps: 7"), std::string::npos);
}

TEST(Reconcile, ScrapedProgressLandsInStatus) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  Observed in = observed(job, gang(job, 2, "Running"));
  in.progress = ScrapedProgress{7, 12.3456, 6, std::nullopt, std::nullopt, 333, 1000, 90.6};
  Decision d = reconcile(in);
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["outerRound"], 7);
  EXPECT_EQ((*st)["perplexity"], "12.346");
  EXPECT_EQ((*st)["lastCheckpointRound"], 6);
  EXPECT_EQ((*st)["step"], 333);
  EXPECT_EQ((*st)["steps"], 1000);
  EXPECT_EQ((*st)["progressPercentage"], 33) << "rounded down: 100 only once every step is done";
  EXPECT_EQ((*st)["estimatedRemainingSeconds"], 91);
}

TEST(Reconcile, EachNewStopTheRanksRecordIsInStatusAndAnEvent) {
  // A job that never stopped: its ranks report 0 stops; the status says so, and no event.
  json fresh = make_job("fresh", 2, {{"phase", "Running"}, {"restartCount", 0}, {"startTime", format_rfc3339(kNow)}});
  Observed first = observed(fresh, gang(fresh, 2, "Running"));
  first.progress = ScrapedProgress{};
  first.progress->stops = 0;
  first.progress->rounds_lost = 0;
  Decision none = reconcile(first);
  const auto fresh_status = new_status(none);
  ASSERT_TRUE(fresh_status);
  EXPECT_EQ((*fresh_status)["stops"], 0);
  EXPECT_FALSE(fresh_status->contains("lastStop"));
  EXPECT_FALSE(has_event(none, "RoundsLost")) << "no stop, no event";

  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 1}, {"startTime", format_rfc3339(kNow)}});
  Observed in = observed(job, gang(job, 2, "Running"));
  in.progress = ScrapedProgress{};
  in.progress->stops = 1;
  in.progress->rounds_lost = 23;
  in.progress->last_stop_round = 73;
  in.progress->last_stop_resumed_round = 50;
  Decision d = reconcile(in);
  auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["roundsLost"], 23);
  EXPECT_EQ((*st)["stops"], 1);
  EXPECT_EQ((*st)["lastStop"], json({{"round", 73}, {"resumedRound", 50}, {"roundsLost", 23}}));
  EXPECT_TRUE(has_event(d, "RoundsLost"));

  // The same figures again, or a rank that knows fewer stops: nothing new.
  job["status"] = *st;
  in = observed(job, gang(job, 2, "Running"));
  in.progress = ScrapedProgress{};
  in.progress->stops = 0;
  in.progress->rounds_lost = 0;
  d = reconcile(in);
  EXPECT_FALSE(has_event(d, "RoundsLost"));
  if (auto again = new_status(d)) {
    EXPECT_EQ((*again)["roundsLost"], 23) << "the total never goes down";
  }

  // A second stop: the job got to round 60 from 50 and resumed from 53; the event says so.
  in.progress->stops = 2;
  in.progress->rounds_lost = 30;
  in.progress->last_stop_round = 60;
  in.progress->last_stop_resumed_round = 53;
  d = reconcile(in);
  st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["roundsLost"], 30);
  EXPECT_EQ((*st)["lastStop"]["roundsLost"], 7);
  EXPECT_EQ((*st)["stops"], 2);
  EXPECT_TRUE(has_event(d, "RoundsLost"));
}

TEST(Reconcile, DeletingJobIsLeftToGarbageCollection) {
  json job = make_job("demo", 2, {{"phase", "Running"}, {"restartCount", 0}});
  job["metadata"]["deletionTimestamp"] = format_rfc3339(kNow);
  Decision d = reconcile(observed(job, {}));
  EXPECT_EQ(count<CreateObject>(d), 0);
}

TEST(Reconcile, RestartBackoffDoublesAndIsCapped) {
  ReconcileOptions o;
  o.restart_backoff_s = 10;
  o.restart_backoff_max_s = 60;
  EXPECT_DOUBLE_EQ(restart_backoff(1, o), 10);
  EXPECT_DOUBLE_EQ(restart_backoff(2, o), 20);
  EXPECT_DOUBLE_EQ(restart_backoff(3, o), 40);
  EXPECT_DOUBLE_EQ(restart_backoff(4, o), 60);
}

}  // namespace
}  // namespace ppu::op
