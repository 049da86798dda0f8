// Unit tests of the executor (operator/src/controller/executor.h) against FakeKube
// (tests/operator/kube/fake_kube.h): creation and deletion idempotence, a stale status update
// skipping the pass, refusals vs transient errors, events best effort, the failing action named.
#include <gtest/gtest.h>

#include "controller/executor.h"
#include "kube/fake_kube.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::FakeKube;
using testing::make_job;
using testing::make_pod;

Action status_update(const json& job) {
  PPUJobStatus st;
  st.phase = JobPhase::Pending;
  return UpdateStatus{job["metadata"]["name"], st};
}

Action create_pod(const json& job, int rank) {
  json pod = make_pod(job, rank, "Pending");
  pod.erase("status");
  pod["metadata"].erase("uid");
  return CreateObject{ResourceKind::Pod, pod["metadata"]["name"], pod};
}

Action delete_pod(const std::string& name, const std::string& uid) {
  return DeleteObject{ResourceKind::Pod, name, uid};
}

// A job stored in the fake, as the informer would hand it to reconcile.
json stored_job(FakeKube& kube, const std::string& name = "demo") {
  json job = make_job(name, 2);
  job["metadata"].erase("uid");
  job["metadata"].erase("resourceVersion");
  return kube.put(ResourceKind::PPUJob, job);
}

TEST(Executor, CreatesInOrderAndCountsOnlyNewObjects) {
  FakeKube kube;
  json job = stored_job(kube);
  Decision d;
  d.actions = {status_update(job), create_pod(job, 0), create_pod(job, 1)};
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.created, 2);
  EXPECT_EQ(kube.objects(ResourceKind::Pod, "ns1").size(), 2u);
  auto stored = kube.peek(ResourceKind::PPUJob, "ns1", "demo");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["status"]["phase"], "Pending");
  const auto calls = kube.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], "replace ppujobs/ns1/demo") << "status goes first";
  EXPECT_EQ(calls[1], "create pods/ns1/demo-rank-0");
}

TEST(Executor, AlreadyExistsIsSuccessButNotACreation) {
  FakeKube kube;
  json job = stored_job(kube);
  Decision first;
  first.actions = {create_pod(job, 0)};
  ASSERT_TRUE(Executor(kube).execute(job, first).ok);
  Decision again;
  again.actions = {create_pod(job, 0), create_pod(job, 1)};
  ExecResult r = Executor(kube).execute(job, again);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.created, 1) << "rank 0 existed (409 AlreadyExists), rank 1 is new";
  EXPECT_FALSE(r.refusal.has_value());
}

TEST(Executor, StaleStatusConflictSkipsTheRestOfThePass) {
  FakeKube kube;
  json job = stored_job(kube);
  json newer = job;
  newer["spec"]["replicas"] = 3;
  kube.put(ResourceKind::PPUJob, newer);  // the job moved on: our resourceVersion is stale
  Decision d;
  d.actions = {status_update(job), create_pod(job, 0)};
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.conflict);
  EXPECT_EQ(r.created, 0);
  EXPECT_TRUE(kube.objects(ResourceKind::Pod).empty()) << "nothing after a conflicting status update runs";
}

TEST(Executor, StatusUpdateOfADeletedJobEndsThePassQuietly) {
  FakeKube kube;
  json job = stored_job(kube);
  ASSERT_TRUE(kube.remove(ResourceKind::PPUJob, "ns1", "demo").ok());
  Decision d;
  d.actions = {status_update(job), create_pod(job, 0)};
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(r.conflict);
  EXPECT_TRUE(kube.objects(ResourceKind::Pod).empty()) << "no pods for a job that is gone";
}

TEST(Executor, DeleteOfAMissingPodOrAnotherIncarnationIsSuccess) {
  FakeKube kube;
  json job = stored_job(kube);
  Decision make;
  make.actions = {create_pod(job, 0), create_pod(job, 1)};
  ASSERT_TRUE(Executor(kube).execute(job, make).ok);
  auto rank1 = kube.peek(ResourceKind::Pod, "ns1", "demo-rank-1");
  ASSERT_TRUE(rank1.has_value());
  const std::string uid1 = (*rank1)["metadata"]["uid"];

  Decision d;
  d.actions = {delete_pod("demo-rank-7", ""),            // 404: never existed
               delete_pod("demo-rank-0", "an-old-uid"),  // 409: the name holds a newer pod
               delete_pod("demo-rank-1", uid1)};         // the incarnation we saw: deleted
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.deleted, 1);
  EXPECT_TRUE(kube.peek(ResourceKind::Pod, "ns1", "demo-rank-0").has_value()) << "the newer pod must survive";
  EXPECT_FALSE(kube.peek(ResourceKind::Pod, "ns1", "demo-rank-1").has_value());
}

TEST(Executor, AForceDeletionSendsGracePeriodZeroWithTheUid) {
  FakeKube kube;
  json job = stored_job(kube);
  Decision make;
  make.actions = {create_pod(job, 0)};
  ASSERT_TRUE(Executor(kube).execute(job, make).ok);
  const std::string uid = (*kube.peek(ResourceKind::Pod, "ns1", "demo-rank-0"))["metadata"]["uid"];
  Decision d;
  d.actions = {DeleteObject{ResourceKind::Pod, "demo-rank-0", uid, 0}};
  EXPECT_STREQ(action_name(d.actions[0]), "ForceDelete");
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.deleted, 1);
  EXPECT_EQ(kube.calls().back(), "delete pods/ns1/demo-rank-0 grace=0");
  Decision plain;
  plain.actions = {delete_pod("demo-rank-0", uid)};
  ASSERT_TRUE(Executor(kube).execute(job, plain).ok) << "gone already: 404 is success";
  EXPECT_EQ(kube.calls().back(), "delete pods/ns1/demo-rank-0") << "an ordinary deletion keeps the pod's own grace";
}

TEST(Executor, RefusedCreationIsReportedTransientFailureIsNot) {
  FakeKube kube;
  json job = stored_job(kube);
  kube.fail("create", ResourceKind::Pod, 403, 1, "Forbidden");
  Decision d;
  d.actions = {create_pod(job, 0), create_pod(job, 1)};
  ExecResult refused = Executor(kube).execute(job, d);
  EXPECT_FALSE(refused.ok);
  ASSERT_TRUE(refused.refusal.has_value());
  EXPECT_EQ(refused.refusal->code, 403);
  EXPECT_EQ(refused.refusal->name, "demo-rank-0");
  EXPECT_TRUE(kube.objects(ResourceKind::Pod).empty()) << "the pass stops at the refused creation";

  kube.fail("create", ResourceKind::Pod, 503, 1, "ServiceUnavailable");
  ExecResult transient = Executor(kube).execute(job, d);
  EXPECT_FALSE(transient.ok);
  EXPECT_FALSE(transient.refusal.has_value()) << "503 is retried, not reported as a refusal";

  ExecResult fine = Executor(kube).execute(job, d);
  EXPECT_TRUE(fine.ok) << fine.error;
  EXPECT_EQ(fine.created, 2);
}

TEST(Executor, DeleteJobOfAMissingJobIsSuccessAndEventsAreBestEffort) {
  FakeKube kube;
  json job = stored_job(kube);
  kube.fail("create", ResourceKind::Event, 500, 1);
  Decision d;
  d.actions = {RecordEvent{"Normal", "GangCreated", "created"}, RecordEvent{"Warning", "GangRestart", "rank 1 failed"},
               DeletePPUJob{"demo"}, DeletePPUJob{"demo"}};
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_FALSE(kube.peek(ResourceKind::PPUJob, "ns1", "demo").has_value());
  auto events = kube.objects(ResourceKind::Event, "ns1");
  ASSERT_EQ(events.size(), 1u) << "the first event failed (500) and was skipped";
  EXPECT_EQ(events[0]["reason"], "GangRestart");
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_EQ(events[0]["involvedObject"]["kind"], "PPUJob");
  EXPECT_EQ(events[0]["involvedObject"]["uid"], job["metadata"]["uid"]);
}

TEST(Executor, OtherFailuresStopThePassWithTheActionInTheError) {
  FakeKube kube;
  json job = stored_job(kube);
  kube.fail("patch", ResourceKind::ConfigMap, 0);  // no response
  Decision d;
  d.actions = {PatchObject{ResourceKind::ConfigMap, "demo-config", json{{"data", {{"a", "b"}}}}}, create_pod(job, 0)};
  ExecResult r = Executor(kube).execute(job, d);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.conflict);
  EXPECT_NE(r.error.find("Patch configmaps/demo-config"), std::string::npos) << r.error;
  EXPECT_TRUE(kube.objects(ResourceKind::Pod).empty());
}

}  // namespace
}  // namespace ppu::op
