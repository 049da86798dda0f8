// Table-driven tests of reconcile(), one table per policy (operator/src/reconcile/policy_*.cpp):
// restart, completion/TTL, suspend, deadline. Each row is an observed state (job status, run
// policy, the ranks' pods, the time) and the whole decision expected for it: phase, events in
// order, pod creations and deletions, TTL deletion, requeue, the gang-restart signal, status
// fields.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reconcile/job_constants.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::at;
using testing::event_reasons;
using testing::finished_status;
using testing::make_job;
using testing::make_pod;
using testing::new_status;
using testing::observed;
using testing::rank_result;
using testing::running_status;
using testing::with_exit;

struct Row {
  std::string name;
  json status;                    // the job's status before the pass
  json run_policy;                // merged over make_job's {backoffLimit 2, cleanPodPolicy Running}
  std::vector<std::string> pods;  // per rank: Pending Running Succeeded Failed exit2 exit4 terminating, "-" = none
  // Expected:
  std::string phase;                // status.phase after the pass
  std::vector<std::string> events;  // event reasons, in order
  int creates = 0;                  // pods created
  int deletes = 0;                  // pods deleted
  bool delete_job = false;
  double requeue = -1;
  bool gang_restart = false;
  json expect = json::object();     // status fields that must have these values
  std::vector<std::string> absent;  // status fields that must be gone

  Row(std::string n, json st, json rp, std::vector<std::string> p, std::string ph, std::vector<std::string> ev = {},
      int cr = 0, int del = 0, bool dj = false, double rq = -1, bool gr = false, json ex = json::object(),
      std::vector<std::string> ab = {})
      : name(std::move(n)),
        status(std::move(st)),
        run_policy(std::move(rp)),
        pods(std::move(p)),
        phase(std::move(ph)),
        events(std::move(ev)),
        creates(cr),
        deletes(del),
        delete_job(dj),
        requeue(rq),
        gang_restart(gr),
        expect(std::move(ex)),
        absent(std::move(ab)) {}
};

std::ostream& operator<<(std::ostream& os, const Row& r) { return os << r.name; }

json pod_in(const json& job, int rank, const std::string& state) {
  if (state == "Succeeded") return with_exit(make_pod(job, rank, "Running"), 0, rank_result());
  if (state == "Failed") return with_exit(make_pod(job, rank, "Running"), 1, "boom");
  if (state == "exit2") return with_exit(make_pod(job, rank, "Running"), 2, "unknown key model.dmodel");
  if (state == "exit4") return with_exit(make_pod(job, rank, "Running"), 4, "data.path missing");
  if (state == "terminating") {
    json p = make_pod(job, rank, "Running");
    p["metadata"]["deletionTimestamp"] = at(0);
    return p;
  }
  return make_pod(job, rank, state);
}

Observed observe(const Row& row) {
  json job = make_job("demo", static_cast<int>(row.pods.size()), row.status.is_object() ? row.status : json::object());
  if (row.run_policy.is_object()) job["spec"]["runPolicy"].merge_patch(row.run_policy);
  std::vector<json> pods;
  for (size_t r = 0; r < row.pods.size(); ++r)
    if (row.pods[r] != "-") pods.push_back(pod_in(job, static_cast<int>(r), row.pods[r]));
  return observed(job, std::move(pods));
}

class PolicyTable : public ::testing::TestWithParam<Row> {};

TEST_P(PolicyTable, Decides) {
  const Row& row = GetParam();
  const Decision d = reconcile(observe(row));

  const std::optional<json> written = new_status(d);
  const int creates = testing::count<CreateObject>(d, ResourceKind::Pod);
  const int deletes = testing::count<DeleteObject>(d, ResourceKind::Pod);
  const int delete_job = testing::count<DeletePPUJob>(d);
  const std::vector<std::string> events = event_reasons(d);
  const json before = row.status.is_object() ? row.status : json::object();
  if (row.phase != before.value("phase", "") || !row.expect.empty() || !row.absent.empty()) {
    ASSERT_TRUE(written) << "a status change was expected";
  }
  const json status = written ? *written : before;
  EXPECT_EQ(status.value("phase", ""), row.phase);
  EXPECT_EQ(events, row.events);
  EXPECT_EQ(creates, row.creates);
  EXPECT_EQ(deletes, row.deletes);
  EXPECT_EQ(delete_job, row.delete_job ? 1 : 0);
  EXPECT_DOUBLE_EQ(d.requeue_after_s, row.requeue);
  EXPECT_EQ(d.gang_restart, row.gang_restart);
  for (const auto& [k, v] : row.expect.items()) {
    ASSERT_TRUE(status.contains(k)) << k;
    EXPECT_EQ(status[k], v) << k;
  }
  for (const auto& k : row.absent) EXPECT_FALSE(status.contains(k)) << k;
  if (written) {
    ASSERT_FALSE(d.actions.empty());
    EXPECT_TRUE(std::holds_alternative<UpdateStatus>(d.actions.front())) << "status first";
  }
}

std::string row_name(const ::testing::TestParamInfo<Row>& i) { return i.param.name; }

json restarting(int restarts, int64_t next_in) {
  return {{"phase", phase::kRestarting},
          {"restartCount", restarts},
          {"startTime", at(-100)},
          {"nextRestartTime", at(next_in)}};
}

// ---- Restart: failures, back-off, backoffLimit, exit codes 2 and 4, the Restarting phase ----
INSTANTIATE_TEST_SUITE_P(
    RestartPolicy, PolicyTable,
    ::testing::Values(Row{"FailedRankRestartsTheGang",
                          running_status(0),
                          {},
                          {"Running", "Failed"},
                          phase::kRestarting,
                          {reason::kGangRestart},
                          0,
                          2,
                          false,
                          -1,
                          true,
                          {{"restartCount", 1}, {"nextRestartTime", at(10)}}},
                      Row{"SecondRestartWaitsTwiceAsLong",
                          running_status(1),
                          {},
                          {"Failed", "Running"},
                          phase::kRestarting,
                          {reason::kGangRestart},
                          0,
                          2,
                          false,
                          -1,
                          true,
                          {{"restartCount", 2}, {"nextRestartTime", at(20)}}},
                      Row{"BackoffLimitReachedFailsTheJob",
                          running_status(2),
                          {},
                          {"Running", "Failed"},
                          phase::kFailed,
                          {reason::kBackoffLimitExceeded},
                          0,
                          1,
                          false,
                          -1,
                          false,
                          {{"reason", reason::kBackoffLimitExceeded}, {"restartCount", 2}, {"completionTime", at(0)}}},
                      Row{"RankLostAfterStartRestarts",
                          running_status(0),
                          {},
                          {"Running", "-"},
                          phase::kRestarting,
                          {reason::kGangRestart},
                          0,
                          1,
                          false,
                          -1,
                          true,
                          {{"restartCount", 1}}},
                      Row{"RankMissingBeforeStartIsCreated",
                          {{"phase", phase::kPending}, {"restartCount", 0}, {"startTime", at(-5)}},
                          {},
                          {"Pending", "-"},
                          phase::kPending,
                          {},
                          1,
                          0,
                          false,
                          -1,
                          false},
                      Row{"ExitCode2FailsAtOnce",
                          running_status(0),
                          {},
                          {"Running", "exit2"},
                          phase::kFailed,
                          {reason::kConfigurationError},
                          0,
                          1,
                          false,
                          -1,
                          false,
                          {{"reason", reason::kConfigurationError},
                           {"message", "rank 1 exited with code 2: unknown key model.dmodel"}}},
                      Row{"ExitCode4FailsAtOnceWithRestartsLeft",
                          running_status(0),
                          {},
                          {"exit4", "Running"},
                          phase::kFailed,
                          {reason::kCheckpointOrDataMissing},
                          0,
                          1,
                          false,
                          -1,
                          false,
                          {{"reason", reason::kCheckpointOrDataMissing}, {"restartCount", 0}}},
                      Row{"RestartingTearsDownTheOldGangFirst",
                          restarting(1, 5),
                          {},
                          {"Running", "Failed"},
                          phase::kRestarting,
                          {},
                          0,
                          2,
                          false,
                          -1,
                          false},
                      Row{"RestartingWaitsForTerminatingPods",
                          restarting(1, -5),
                          {},
                          {"terminating", "-"},
                          phase::kRestarting,
                          {},
                          0,
                          0,
                          false,
                          -1,
                          false},
                      Row{"RestartingWaitsOutTheBackoff",
                          restarting(1, 5),
                          {},
                          {"-", "-"},
                          phase::kRestarting,
                          {},
                          0,
                          0,
                          false,
                          5,
                          false},
                      Row{"RestartingRecreatesTheGangWhenDue",
                          restarting(1, -1),
                          {},
                          {"-", "-"},
                          phase::kPending,
                          {reason::kGangCreated},
                          2,
                          0,
                          false,
                          -1,
                          false,
                          {{"restartCount", 1}},
                          {"nextRestartTime"}}),
    row_name);

// ---- Completion and TTL: Succeeded, cleanPodPolicy, ttlSecondsAfterFinished ----
INSTANTIATE_TEST_SUITE_P(CompletionTtlPolicy, PolicyTable,
                         ::testing::Values(Row{"AllRanksSucceeded",
                                               running_status(0),
                                               {},
                                               {"Succeeded", "Succeeded"},
                                               phase::kSucceeded,
                                               {reason::kAllRanksSucceeded},
                                               0,
                                               0,
                                               false,
                                               -1,
                                               false,
                                               {{"completionTime", at(0)}},
                                               {"reason", "message"}},
                                           Row{"OneRankStillRunningIsNotDone",
                                               running_status(0),
                                               {},
                                               {"Succeeded", "Running"},
                                               phase::kRunning,
                                               {},
                                               0,
                                               0,
                                               false,
                                               -1,
                                               false},
                                           Row{"CleanPodPolicyAllDeletesFinishedPodsToo",
                                               running_status(0),
                                               {{"cleanPodPolicy", "All"}},
                                               {"Succeeded", "Succeeded"},
                                               phase::kSucceeded,
                                               {reason::kAllRanksSucceeded},
                                               0,
                                               2,
                                               false,
                                               -1,
                                               false},
                                           Row{"TtlRequeuesUntilDue",
                                               running_status(0),
                                               {{"ttlSecondsAfterFinished", 60}},
                                               {"Succeeded", "Succeeded"},
                                               phase::kSucceeded,
                                               {reason::kAllRanksSucceeded},
                                               0,
                                               0,
                                               false,
                                               60,
                                               false},
                                           Row{"TtlDueDeletesTheJob",
                                               finished_status(phase::kSucceeded, 61),
                                               {{"ttlSecondsAfterFinished", 60}},
                                               {"Succeeded", "Succeeded"},
                                               phase::kSucceeded,
                                               {},
                                               0,
                                               0,
                                               true,
                                               -1,
                                               false},
                                           Row{"TtlNotDueRequeuesForTheRest",
                                               finished_status(phase::kFailed, 10),
                                               {{"ttlSecondsAfterFinished", 60}},
                                               {"-", "-"},
                                               phase::kFailed,
                                               {},
                                               0,
                                               0,
                                               false,
                                               50,
                                               false},
                                           Row{"FinishedCleanPodPolicyRunningDeletesActivePodsOnly",
                                               finished_status(phase::kFailed, 1),
                                               {},
                                               {"Running", "Failed"},
                                               phase::kFailed,
                                               {},
                                               0,
                                               1,
                                               false,
                                               -1,
                                               false},
                                           Row{"FinishedCleanPodPolicyNoneKeepsEveryPod",
                                               finished_status(phase::kFailed, 1),
                                               {{"cleanPodPolicy", "None"}},
                                               {"Running", "Failed"},
                                               phase::kFailed,
                                               {},
                                               0,
                                               0,
                                               false,
                                               -1,
                                               false}),
                         row_name);

// ---- Suspend: pods deleted, Suspended held, resume restarts the deadline clock ----
INSTANTIATE_TEST_SUITE_P(
    SuspendPolicy, PolicyTable,
    ::testing::Values(Row{"SuspendDeletesEveryPod",
                          running_status(0),
                          {{"suspend", true}},
                          {"Running", "Succeeded"},
                          phase::kSuspended,
                          {reason::kSuspended},
                          0,
                          2,
                          false,
                          -1,
                          false},
                      Row{"SuspendedStaysQuiet",
                          {{"phase", phase::kSuspended}, {"restartCount", 0}, {"startTime", at(-100)}},
                          {{"suspend", true}},
                          {"-", "-"},
                          phase::kSuspended,
                          {},
                          0,
                          0,
                          false,
                          -1,
                          false},
                      Row{"SuspendedIgnoresItsDeadline",
                          {{"phase", phase::kSuspended}, {"restartCount", 0}, {"startTime", at(-1000)}},
                          {{"suspend", true}, {"activeDeadlineSeconds", 10}},
                          {"-", "-"},
                          phase::kSuspended,
                          {},
                          0,
                          0,
                          false,
                          -1,
                          false},
                      Row{"SuspendDropsAPendingRestart",
                          restarting(1, 30),
                          {{"suspend", true}},
                          {"-", "-"},
                          phase::kSuspended,
                          {reason::kSuspended},
                          0,
                          0,
                          false,
                          -1,
                          false,
                          {{"restartCount", 1}},
                          {"nextRestartTime"}},
                      Row{"ResumeRestartsTheDeadlineClock",
                          {{"phase", phase::kSuspended}, {"restartCount", 0}, {"startTime", at(-1000)}},
                          {{"suspend", false}, {"activeDeadlineSeconds", 100}},
                          {"-", "-"},
                          phase::kPending,
                          {reason::kResumed, reason::kGangCreated},
                          2,
                          0,
                          false,
                          100,
                          false,
                          {{"startTime", at(0)}}}),
    row_name);

// ---- Deadline: activeDeadlineSeconds from status.startTime ----
INSTANTIATE_TEST_SUITE_P(DeadlinePolicy, PolicyTable,
                         ::testing::Values(Row{"BeforeTheDeadlineRequeuesAtIt",
                                               running_status(0),
                                               {{"activeDeadlineSeconds", 140}},
                                               {"Running", "Running"},
                                               phase::kRunning,
                                               {},
                                               0,
                                               0,
                                               false,
                                               40,
                                               false},
                                           Row{"PastTheDeadlineFails",
                                               running_status(0),
                                               {{"activeDeadlineSeconds", 100}},
                                               {"Running", "Pending"},
                                               phase::kFailed,
                                               {reason::kDeadlineExceeded},
                                               0,
                                               2,
                                               false,
                                               -1,
                                               false,
                                               {{"reason", reason::kDeadlineExceeded}}},
                                           Row{"DeadlineBeatsAFailedRank",
                                               running_status(0),
                                               {{"activeDeadlineSeconds", 50}},
                                               {"Running", "Failed"},
                                               phase::kFailed,
                                               {reason::kDeadlineExceeded},
                                               0,
                                               1,
                                               false,
                                               -1,
                                               false,
                                               {{"restartCount", 0}}},
                                           Row{"NewJobStartsTheClock",
                                               json::object(),
                                               {{"activeDeadlineSeconds", 100}},
                                               {"-", "-"},
                                               phase::kPending,
                                               {reason::kGangCreated},
                                               2,
                                               0,
                                               false,
                                               100,
                                               false,
                                               {{"startTime", at(0)}}},
                                           Row{"NearestOfBackoffAndDeadline",
                                               restarting(1, 30),
                                               {{"activeDeadlineSeconds", 110}},
                                               {"-", "-"},
                                               phase::kRestarting,
                                               {},
                                               0,
                                               0,
                                               false,
                                               10,
                                               false}),
                         row_name);

}  // namespace
}  // namespace ppu::op
