// Unit tests of Kueue admission (operator/src/reconcile/policy_queue.cpp, kueue_workload.h): a
// job labelled kueue.x-k8s.io/queue-name gets one Workload for its whole gang and no pod before
// Kueue admits it; the status says why it waits; admission lets the gang be created; an eviction
// removes the pods, then releases the quota, without counting a restart; suspend deletes the
// Workload and the end of the job marks it Finished; a gang restart keeps it; a job without the
// label is unchanged.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reconcile/job_constants.h"
#include "reconcile/kueue_workload.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::condition_of;
using testing::count;
using testing::gang;
using testing::has_event;
using testing::make_job;
using testing::observed;
using testing::status_after;

json queued_job(json status = json::object(), const std::string& priority_class = "") {
  json job = make_job("demo", 4, std::move(status));
  job["metadata"]["labels"] = {{kQueueNameLabel, "team-a"}};
  if (!priority_class.empty()) job["metadata"]["labels"][kPriorityClassLabel] = priority_class;
  return job;
}

Observed kueue_observed(const json& job, std::vector<json> pods = {}) {
  Observed in = observed(job, std::move(pods));
  in.options.kueue = true;
  return in;
}

json condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message = "") {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", testing::at(-10)}};
}

// The job's Workload as Kueue left it: `conditions`, and an admission when quota is reserved.
json workload(const json& job, json conditions, bool with_admission) {
  json w = build_workload(parse_job(job), std::nullopt);
  w["metadata"]["uid"] = "wl-uid";
  w["metadata"]["resourceVersion"] = "7";
  w["metadata"]["generation"] = 1;
  w["status"] = {{"conditions", std::move(conditions)}};
  if (with_admission) w["status"]["admission"] = {{"clusterQueue", "cq"}, {"podSetAssignments", json::array()}};
  return w;
}

json pending_workload(const json& job) {
  return workload(job,
                  json::array({condition("QuotaReserved", "False", "Pending",
                                         "couldn't assign flavors to pod set ranks: insufficient unused quota for "
                                         "cpu in flavor default, 2 more needed")}),
                  false);
}

json admitted_workload(const json& job) {
  return workload(job,
                  json::array({condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cq"),
                               condition("Admitted", "True", "Admitted", "The workload is admitted")}),
                  true);
}

json preempted_workload(const json& job) {
  return workload(
      job,
      json::array({condition("QuotaReserved", "True", "QuotaReserved"), condition("Admitted", "True", "Admitted"),
                   condition("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload"),
                   condition("Preempted", "True", "InClusterQueue")}),
      true);
}

std::optional<json> created(const Decision& d, ResourceKind kind) {
  for (const auto& c : actions_of<CreateObject>(d))
    if (c.kind == kind) return c.object;
  return std::nullopt;
}

TEST(Queue, AQueuedJobGetsOneWorkloadForItsWholeGangAndNoPod) {
  const json job = queued_job();
  const Decision d = reconcile(kueue_observed(job));
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0) << "no rank pod before admission";
  const auto w = created(d, ResourceKind::Workload);
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ((*w)["metadata"]["name"], "ppujob-demo");
  EXPECT_EQ((*w)["metadata"]["ownerReferences"][0]["kind"], "PPUJob");
  EXPECT_EQ((*w)["spec"]["queueName"], "team-a");
  ASSERT_EQ((*w)["spec"]["podSets"].size(), 1u);
  const json& ranks = (*w)["spec"]["podSets"][0];
  EXPECT_EQ(ranks["name"], "ranks");
  EXPECT_EQ(ranks["count"], 4) << "quota for all K ranks at once";
  EXPECT_EQ(ranks["template"]["spec"]["containers"][0]["name"], "ppu-train");
  EXPECT_FALSE((*w)["spec"].contains("priority"));
  const json st = status_after(kueue_observed(job), d);
  EXPECT_EQ(st["phase"], "Pending");
  EXPECT_EQ(st["reason"], "Queued");
  EXPECT_FALSE(st.contains("startTime")) << "the active period (and its deadline) starts at admission";
  const auto admitted = condition_of(st, "Admitted");
  ASSERT_TRUE(admitted);
  EXPECT_EQ((*admitted)["status"], "False");
}

TEST(Queue, AResourceGivenOnlyAsALimitIsRequestedAsThePodWouldBe) {
  json job = queued_job();
  job["spec"]["resources"] = {{"requests", {{"cpu", "8"}}}, {"limits", {{"cpu", "16"}, {"nvidia.com/gpu", 1}}}};
  const json w = build_workload(parse_job(job), std::nullopt);
  const json& res = w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"];
  EXPECT_EQ(res["requests"]["nvidia.com/gpu"], 1) << "Kueue counts requests: the GPUs must be in them";
  EXPECT_EQ(res["requests"]["cpu"], "8") << "a request given stays";
  EXPECT_EQ(res["limits"]["cpu"], "16");
}

TEST(Queue, ALiveJobReservesItsRendezvousPodToo) {
  json job = queued_job();
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  const json w = build_workload(parse_job(job), std::nullopt);
  ASSERT_EQ(w["spec"]["podSets"].size(), 2u);
  EXPECT_EQ(w["spec"]["podSets"][1]["name"], "rendezvous");
  EXPECT_EQ(w["spec"]["podSets"][1]["count"], 1);
  Observed in = kueue_observed(job);
  EXPECT_EQ(count<CreateObject>(reconcile(in), ResourceKind::Pod), 0) << "not even the store before admission";
}

TEST(Queue, WaitingShowsKueuesMessageAndCreatesNothing) {
  const json job = queued_job({{"phase", "Pending"}, {"restartCount", 0}});
  Observed in = kueue_observed(job);
  in.workload = pending_workload(job);
  const Decision d = reconcile(in);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Workload), 0);
  const json st = status_after(in, d);
  EXPECT_EQ(st["reason"], "Queued");
  EXPECT_NE(st["message"].get<std::string>().find("insufficient unused quota for cpu"), std::string::npos)
      << st["message"];
}

TEST(Queue, AdmissionCreatesTheGang) {
  const json job = queued_job({{"phase", "Pending"}, {"restartCount", 0}, {"reason", "Queued"}, {"message", "x"}});
  Observed in = kueue_observed(job);
  in.workload = admitted_workload(job);
  const Decision d = reconcile(in);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 4);
  const json st = status_after(in, d);
  EXPECT_FALSE(st.contains("reason")) << "no longer waiting";
  EXPECT_TRUE(st.contains("startTime"));
  const auto admitted = condition_of(st, "Admitted");
  ASSERT_TRUE(admitted);
  EXPECT_EQ((*admitted)["status"], "True");
  EXPECT_NE((*admitted)["message"].get<std::string>().find("ClusterQueue cq"), std::string::npos);
  EXPECT_TRUE(has_event(d, "Admitted"));
}

TEST(Queue, EvictionRemovesThePodsThenReleasesTheQuotaWithoutCountingARestart) {
  const json job = queued_job(testing::running_status(1));
  Observed in = kueue_observed(job, gang(job, 4, "Running"));
  in.workload = preempted_workload(job);
  Decision d = reconcile(in);
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 4);
  EXPECT_EQ(count<PatchStatusOf>(d), 0) << "quota is released only once the pods are gone";
  json st = status_after(in, d);
  EXPECT_EQ(st["phase"], "Pending");
  EXPECT_EQ(st["reason"], "Evicted");
  EXPECT_EQ(st["restartCount"], 1) << "a preemption is not a failure";
  EXPECT_NE(st["message"].get<std::string>().find("Preempted"), std::string::npos);

  // The pods are gone: the quota goes back, as Kueue's own job integrations do it.
  json later = job;
  later["status"] = st;
  Observed gone = kueue_observed(later);
  gone.workload = preempted_workload(job);
  d = reconcile(gone);
  const auto patches = actions_of<PatchStatusOf>(d);
  ASSERT_EQ(patches.size(), 1u);
  const json& patch = patches[0].patch;
  EXPECT_EQ(patches[0].name, "ppujob-demo");
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "7") << "guarded against Kueue's concurrent writes";
  EXPECT_TRUE(patch["status"]["admission"].is_null());
  std::map<std::string, json> by_type;
  for (const auto& c : patch["status"]["conditions"]) by_type[c["type"]] = c;
  EXPECT_EQ(by_type["QuotaReserved"]["status"], "False");
  EXPECT_EQ(by_type["QuotaReserved"]["reason"], "Pending");
  EXPECT_EQ(by_type["Admitted"]["status"], "False");
  EXPECT_EQ(by_type["Requeued"]["status"], "True") << "a preempted job queues again";
  EXPECT_EQ(by_type["Evicted"]["status"], "True") << "Kueue's own conditions are kept";
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
}

TEST(Queue, AGangRestartKeepsTheWorkloadAndItsPlace) {
  json job = queued_job(testing::running_status(0));
  auto pods = gang(job, 4, "Running");
  pods[2] = testing::with_exit(pods[2], 1, "crash");
  Observed in = kueue_observed(job, pods);
  in.workload = admitted_workload(job);
  const Decision d = reconcile(in);
  EXPECT_TRUE(d.gang_restart);
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Workload), 0);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Workload), 0);
}

TEST(Queue, SuspendDeletesTheWorkloadAndFinishingMarksItFinished) {
  json job = queued_job(testing::running_status(0));
  job["spec"]["runPolicy"]["suspend"] = true;
  Observed in = kueue_observed(job, gang(job, 4, "Running"));
  in.workload = admitted_workload(job);
  EXPECT_EQ(count<DeleteObject>(reconcile(in), ResourceKind::Workload), 1) << "suspend releases the quota";

  json done = queued_job(testing::finished_status("Succeeded", 5));
  done["status"]["conditions"] = json::array({condition("Succeeded", "True", "AllRanksSucceeded", "all 4 ranks")});
  Observed fin = kueue_observed(done);
  fin.workload = admitted_workload(done);
  const auto patches = actions_of<PatchStatusOf>(reconcile(fin));
  ASSERT_EQ(patches.size(), 1u);
  bool finished = false;
  for (const auto& c : patches[0].patch["status"]["conditions"])
    if (c["type"] == "Finished") finished = c["status"] == "True" && c["reason"] == "Succeeded";
  EXPECT_TRUE(finished) << patches[0].patch.dump();
  fin.workload = workload(done, json::array({condition("Finished", "True", "Succeeded")}), true);
  EXPECT_EQ(count<PatchStatusOf>(reconcile(fin)), 0) << "once";
}

TEST(Queue, APriorityClassSetsThePriorityAndAMissingOneWaits) {
  const json job = queued_job(json::object(), "high");
  Observed in = kueue_observed(job);
  Decision d = reconcile(in);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Workload), 0);
  EXPECT_EQ(status_after(in, d)["reason"], "PriorityClassNotFound");
  in.priority_value = 1000;
  d = reconcile(in);
  const auto w = created(d, ResourceKind::Workload);
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)["spec"]["priority"], 1000) << "Kueue fills it only for the job kinds it knows";
  EXPECT_EQ((*w)["spec"]["priorityClassRef"]["kind"], "WorkloadPriorityClass");
  EXPECT_EQ((*w)["spec"]["priorityClassRef"]["name"], "high");
}

TEST(Queue, WithoutKueueEnabledALabelledJobWaitsAndSaysWhy) {
  const json job = queued_job();
  Observed in = observed(job);  // options.kueue false
  const Decision d = reconcile(in);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Workload), 0);
  EXPECT_EQ(status_after(in, d)["reason"], "KueueNotEnabled");
}

TEST(Queue, AJobWithoutTheLabelIsUnchanged) {
  const json job = make_job("demo", 4);
  Observed in = kueue_observed(job);
  const Decision d = reconcile(in);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 4);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Workload), 0);
  EXPECT_FALSE(condition_of(status_after(in, d), "Admitted"));
}

TEST(Queue, AWorkloadAdmittedForAnotherSizeIsReplaced) {
  const json job = queued_job({{"phase", "Pending"}, {"restartCount", 0}});
  Observed in = kueue_observed(job);
  json w = admitted_workload(job);
  w["spec"]["podSets"][0]["count"] = 2;
  in.workload = w;
  const Decision d = reconcile(in);
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Workload), 1);
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 0);
}

}  // namespace
}  // namespace ppu::op
