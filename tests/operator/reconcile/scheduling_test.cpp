// Unit tests of condition PodsUnschedulable (policy_scheduling.cpp): a pod the scheduler has no
// node for (PodScheduled False, reason Unschedulable) is named with the scheduler's reason and
// the time it has waited since, and one Warning event says so when the condition turns True; it
// turns False once every pod has a node and is absent on a job whose pods never waited; a pod the
// pass deletes (an elastic job's Pending slot above a smaller size) no longer counts; an elastic
// job running without an unschedulable slot is not Degraded for it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kube/rfc3339.h"
#include "reconcile/job_constants.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::condition_of;
using testing::count_events;
using testing::deleted_pods;
using testing::gang;
using testing::make_job;
using testing::make_pod;
using testing::observed;
using testing::observed_live;
using testing::running_status;
using testing::status_after;

constexpr const char* kNoCpu = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available";

// Rank `rank`'s pod, Pending without a node since `since` (Unix seconds).
json unscheduled(const json& job, int rank, int64_t since) {
  json pod = make_pod(job, rank, "Pending");
  pod["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", kNoCpu},
                                              {"lastTransitionTime", format_rfc3339(since)}}});
  return pod;
}

json pending_status() { return {{"phase", "Pending"}, {"restartCount", 0}}; }

TEST(Scheduling, APodWithoutANodeIsNamedWithTheSchedulersReasonAndOneWarning) {
  const json job = make_job("demo", 4, pending_status());
  std::vector<json> pods = gang(job, 2, "Running");
  pods.push_back(unscheduled(job, 3, testing::kNow - 30));
  pods.push_back(unscheduled(job, 2, testing::kNow - 90));
  const Observed in = observed(job, pods);
  const Decision d = reconcile(in);
  const json st = status_after(in, d);
  const auto c = condition_of(st, condition::kPodsUnschedulable);
  ASSERT_TRUE(c) << st.dump();
  EXPECT_EQ((*c)["status"], "True");
  EXPECT_EQ((*c)["reason"], reason::kUnschedulable);
  const std::string msg = (*c)["message"];
  // The longest waiting first, with the time it has waited since and the scheduler's words.
  EXPECT_NE(msg.find("2 pods have no node (demo-rank-2, demo-rank-3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("since " + format_rfc3339(testing::kNow - 90)), std::string::npos) << msg;
  EXPECT_NE(msg.find("Insufficient cpu"), std::string::npos) << msg;
  EXPECT_EQ(count_events(d, reason::kUnschedulable), 1);

  // The next pass sees the condition True already: the same message, no second event.
  json later = job;
  later["status"] = st;
  const Observed again = observed(later, pods);
  const Decision d2 = reconcile(again);
  EXPECT_EQ(count_events(d2, reason::kUnschedulable), 0);
  EXPECT_EQ((*condition_of(status_after(again, d2), condition::kPodsUnschedulable))["message"], msg);

  // Every pod has a node: False, reason Scheduled.
  json done = job;
  done["status"] = st;
  const Observed scheduled = observed(done, gang(done, 4, "Running"));
  const auto off = condition_of(status_after(scheduled, reconcile(scheduled)), condition::kPodsUnschedulable);
  ASSERT_TRUE(off);
  EXPECT_EQ((*off)["status"], "False");
  EXPECT_EQ((*off)["reason"], reason::kScheduled);
}

TEST(Scheduling, NoConditionOnAJobWhosePodsNeverWaitedForANode) {
  const json job = make_job("demo", 4, running_status(0));
  std::vector<json> pods = gang(job, 3, "Running");
  pods.push_back(make_pod(job, 3, "Pending"));  // created, not yet looked at by the scheduler
  const Observed in = observed(job, pods);
  EXPECT_FALSE(condition_of(status_after(in, reconcile(in)), condition::kPodsUnschedulable));
}

TEST(Scheduling, AnElasticJobsUnschedulableSlotIsNamedButNotDegraded) {
  json job = make_job("demo", 4, running_status(0));
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  job["spec"]["elastic"] = {{"minReplicas", 2}, {"maxReplicas", 8}};
  job["status"]["desiredReplicas"] = 4;
  job["status"]["liveRanks"] = 3;
  job["status"]["minSliceCoverage"] = "1.000";
  std::vector<json> pods = gang(job, 3, "Running");
  pods.push_back(unscheduled(job, 3, testing::kNow - 10));
  const Observed in = observed_live(job, pods);
  const json st = status_after(in, reconcile(in));
  EXPECT_EQ((*condition_of(st, condition::kPodsUnschedulable))["status"], "True") << st.dump();
  EXPECT_EQ((*condition_of(st, condition::kDegraded))["status"], "False") << st.dump();

  // Shrunk to 3: the Pending pod of slot 3 is deleted in the same pass and no longer counts.
  json smaller = job;
  smaller["spec"]["replicas"] = 3;
  const Observed shrunk = observed_live(smaller, pods);
  const Decision d = reconcile(shrunk);
  EXPECT_EQ(deleted_pods(d), (std::vector<std::string>{"demo-rank-3"}));
  EXPECT_FALSE(condition_of(status_after(shrunk, d), condition::kPodsUnschedulable));
}

}  // namespace
}  // namespace ppu::op
