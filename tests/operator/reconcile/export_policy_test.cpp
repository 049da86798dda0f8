// Unit tests of the export: the policy (operator/src/reconcile/policy_export.cpp) decides from
// the observed PPUJob, its export Job and that Job's pods; the builder (export_job.cpp) makes the
// Job from the rank pods' own pieces; export_outcome.cpp reads ppu-export's termination message.
#include <gtest/gtest.h>

#include <prometheus/text_serializer.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/export_result.h"
#include "core/run_result.h"
#include "kube/rfc3339.h"
#include "metrics/operator_metrics.h"
#include "reconcile/export_job.h"
#include "reconcile/export_outcome.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_status.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::at;
using testing::condition_of;
using testing::count;
using testing::finished_status;
using testing::kNow;
using testing::make_export_job;
using testing::make_export_pod;
using testing::make_job;
using testing::make_pod;
using testing::new_status;
using testing::observed;
using testing::rank_result;
using testing::running_status;
using testing::status_after;
using testing::with_exit;
using testing::with_export;

// What ppu-export writes on success (core/export_result.h: its one writer).
const std::string kResultMessage = ppu::format_export_result({"hf", "fp32", "/checkpoints/model", 10});
const std::string kNoCheckpoint = "no valid checkpoint in /checkpoints: round-000010: global.pt fails its checksum\n";

json succeeded_status(int64_t completed_ago = 10) {
  json st = finished_status(phase::kSucceeded, completed_ago);
  st["outerRound"] = 10;
  return st;
}

// A 2-rank job with spec.export (checkpoints on PVC ckpt) in `status`, ranks in `rank_state`.
Observed observe(json status, const std::string& rank_state = "Succeeded", json spec_export = json::object()) {
  json job = with_export(make_job("demo", 2, std::move(status)), std::move(spec_export));
  std::vector<json> pods;
  pods.reserve(2);
  for (int r = 0; r < 2; ++r)
    pods.push_back(rank_state == "Succeeded" ? with_exit(make_pod(job, r, "Running"), 0, rank_result())
                                             : make_pod(job, r, rank_state));
  return observed(job, std::move(pods));
}

bool writes_status(const Decision& d) { return new_status(d).has_value(); }
std::vector<std::string> events(const Decision& d) { return testing::event_reasons(d); }
bool deletes_job(const Decision& d) { return count<DeletePPUJob>(d) > 0; }
// Condition Exported of a status; null when it has none.
json exported(const json& status) { return condition_of(status, condition::kExported).value_or(json()); }
// The next pass sees what this one wrote.
void advance(Observed& in, const Decision& d) { in.job["status"] = status_after(in, d); }

// ---- the policy -----------------------------------------------------------------------------

TEST(ExportPolicy, NothingIsExportedWhileTheJobRuns) {
  Observed in = observe(running_status(), "Running");
  Decision d = reconcile(in);
  EXPECT_TRUE(actions_of<CreateObject>(d, ResourceKind::Job).empty());
  EXPECT_TRUE(exported(status_after(in, d)).is_null());
}

TEST(ExportPolicy, SuccessCreatesExactlyOneExportJobAfterItsNetworkPolicy) {
  Observed in = observe(running_status());
  Decision d = reconcile(in);
  const json st = status_after(in, d);
  EXPECT_EQ(st["phase"], phase::kSucceeded);
  const auto jobs = actions_of<CreateObject>(d, ResourceKind::Job);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].name, "demo-export");
  int policy_at = -1, job_at = -1;
  for (size_t i = 0; i < d.actions.size(); ++i) {
    const auto* c = std::get_if<CreateObject>(&d.actions[i]);
    if (!c) continue;
    if (c->name == "demo.export") policy_at = static_cast<int>(i);
    if (c->name == "demo-export") job_at = static_cast<int>(i);
  }
  EXPECT_GE(policy_at, 0) << "the export pod's NetworkPolicy is created";
  EXPECT_LT(policy_at, job_at) << "before the Job, so its pod is never unprotected";
  EXPECT_EQ(exported(st)["status"], "False");
  EXPECT_EQ(exported(st)["reason"], reason::kExportRunning);
  EXPECT_NE(exported(st)["message"].get<std::string>().find("model/ on PersistentVolumeClaim ckpt"), std::string::npos);
  EXPECT_EQ(events(d), (std::vector<std::string>{reason::kAllRanksSucceeded, reason::kExportStarted}));
  EXPECT_FALSE(st.contains("export"));
}

TEST(ExportPolicy, LaterPassesNeverMakeASecondJob) {
  Observed in = observe(running_status());
  Decision first = reconcile(in);
  advance(in, first);
  // The informer has not seen the Job yet: the same create (AlreadyExists = done), no new event.
  Decision lagging = reconcile(in);
  const auto again = actions_of<CreateObject>(lagging, ResourceKind::Job);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].name, "demo-export") << "one name, so a repeated create can only find it existing";
  EXPECT_TRUE(events(lagging).empty());
  EXPECT_FALSE(writes_status(lagging));
  // Once it is seen, running: nothing to do.
  in.export_job = make_export_job(in.job);
  in.export_network_policy = build_export_network_policy(parse_job(in.job));
  Decision seen = reconcile(in);
  EXPECT_TRUE(actions_of<CreateObject>(seen, ResourceKind::Job).empty());
  EXPECT_TRUE(actions_of<CreateObject>(seen, ResourceKind::NetworkPolicy).empty());
  EXPECT_TRUE(actions_of<PatchObject>(seen, ResourceKind::NetworkPolicy).empty());
  EXPECT_TRUE(events(seen).empty());
  EXPECT_FALSE(writes_status(seen));
}

TEST(ExportPolicy, ASucceededJobSeenForTheFirstTimeIsExported) {
  // E.g. an operator upgraded after the job finished: level-triggered, the export still happens.
  Observed in = observe(succeeded_status());
  Decision d = reconcile(in);
  EXPECT_EQ(actions_of<CreateObject>(d, ResourceKind::Job).size(), 1u);
  EXPECT_EQ(exported(status_after(in, d))["reason"], reason::kExportRunning);
}

TEST(ExportPolicy, RunningThenExportedWithWhereAndRound) {
  Observed in = observe(running_status());
  advance(in, reconcile(in));
  in.export_job = make_export_job(in.job);
  in.export_network_policy = build_export_network_policy(parse_job(in.job));
  const std::string ran_since = exported(status_after(in, reconcile(in)))["lastTransitionTime"];

  in.export_job = make_export_job(in.job, "Complete");
  in.export_pods = {make_export_pod(*in.export_job, 0, kResultMessage)};
  in.now = kNow + 30;
  Decision d = reconcile(in);
  const json st = status_after(in, d);
  EXPECT_EQ(st["phase"], phase::kSucceeded);
  const json c = exported(st);
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], reason::kModelExported);
  const std::string msg = c["message"];
  EXPECT_NE(msg.find("model/ on PersistentVolumeClaim ckpt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("checkpoint round 10"), std::string::npos) << msg;
  EXPECT_NE(c["lastTransitionTime"], ran_since) << "False → True is a transition";
  EXPECT_EQ(st["export"],
            (json{{"path", "model"}, {"format", "hf"}, {"dtype", "fp32"}, {"claimName", "ckpt"}, {"round", 10}}));
  EXPECT_EQ(events(d), std::vector<std::string>{reason::kModelExported});
  // And it stays so: nothing more is written or created.
  advance(in, d);
  Decision after = reconcile(in);
  EXPECT_FALSE(writes_status(after));
  EXPECT_TRUE(after.actions.empty());
}

TEST(ExportPolicy, RunningThenFailedCarriesTheTerminationMessageAndTheJobStaysSucceeded) {
  Observed in = observe(running_status());
  advance(in, reconcile(in));
  in.export_job = make_export_job(in.job, "Failed");
  // Two attempts: the newest one's message is the one quoted.
  in.export_pods = {make_export_pod(*in.export_job, 1, "an older attempt", "2027-01-15T08:00:00Z", "a"),
                    make_export_pod(*in.export_job, 4, kNoCheckpoint, "2027-01-15T08:01:00Z", "b")};
  Decision d = reconcile(in);
  const json st = status_after(in, d);
  EXPECT_EQ(st["phase"], phase::kSucceeded) << "a failed export is a reason, not a failed job";
  EXPECT_FALSE(st.contains("reason")) << "status.reason is the job's; the condition carries the export's";
  const json c = exported(st);
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], reason::kExportFailed);
  const std::string msg = c["message"];
  EXPECT_NE(msg.find("exited with code 4: no valid checkpoint in /checkpoints: round-000010: global.pt fails"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find("older attempt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("delete Job demo-export to try again"), std::string::npos) << msg;
  EXPECT_FALSE(st.contains("export"));
  EXPECT_EQ(events(d), std::vector<std::string>{reason::kExportFailed});
  for (const auto& e : actions_of<RecordEvent>(d)) EXPECT_EQ(e.type, event_type::kWarning);
  // Not retried by itself: the failed Job stays, nothing is created.
  advance(in, d);
  Decision after = reconcile(in);
  EXPECT_TRUE(actions_of<CreateObject>(after, ResourceKind::Job).empty());
  EXPECT_TRUE(events(after).empty());
}

TEST(ExportPolicy, AFailedJobWithoutPodsQuotesTheJobsReason) {
  Observed in = observe(succeeded_status());
  in.export_job = make_export_job(in.job, "Failed");
  const std::string msg = exported(status_after(in, reconcile(in)))["message"];
  EXPECT_NE(msg.find("PodFailurePolicy: Container ppu-export"), std::string::npos) << msg;
}

TEST(ExportPolicy, AnUnreadableResultStillExportsWithTheRoundUnknown) {
  Observed in = observe(succeeded_status());
  in.export_job = make_export_job(in.job, "Complete");
  in.export_pods = {make_export_pod(*in.export_job, 0, "")};
  const json st = status_after(in, reconcile(in));
  EXPECT_EQ(exported(st)["reason"], reason::kModelExported);
  EXPECT_NE(exported(st)["message"].get<std::string>().find("round unknown"), std::string::npos);
  EXPECT_FALSE(st["export"].contains("round"));
}

TEST(ExportPolicy, AnEndedJobWaitsForItsPodsReportToReachTheCache) {
  Observed in = observe(succeeded_status());
  in.export_job = make_export_job(in.job, "Complete");
  (*in.export_job)["status"]["completionTime"] = at(0);
  // The Job says Complete, its pod is still Running in the cache: wait for the pod's report.
  json pod = make_export_pod(*in.export_job, 0, kResultMessage);
  pod["status"] = {{"phase", "Running"}};
  in.export_pods = {pod};
  EXPECT_EQ(exported(status_after(in, reconcile(in)))["reason"], reason::kExportRunning);
  // No pod at all (deleted, or not seen yet): a grace period, then recorded without the round.
  in.export_pods.clear();
  Decision waiting = reconcile(in);
  EXPECT_EQ(exported(status_after(in, waiting))["reason"], reason::kExportRunning);
  EXPECT_DOUBLE_EQ(waiting.requeue_after_s, 30);
  in.now = kNow + 31;
  const json late = status_after(in, reconcile(in));
  EXPECT_EQ(exported(late)["reason"], reason::kModelExported);
  EXPECT_FALSE(late["export"].contains("round"));
  // The report arrives in time: the round is recorded.
  in.now = kNow + 1;
  in.export_pods = {make_export_pod(*in.export_job, 0, kResultMessage)};
  EXPECT_EQ(status_after(in, reconcile(in))["export"]["round"], 10);
}

TEST(ExportPolicy, NoJobWithoutSpecExport) {
  json job = make_job("demo", 2, running_status());
  Observed in;
  in.job = job;
  in.now = kNow;
  for (int r = 0; r < 2; ++r) in.pods.push_back(with_exit(make_pod(job, r, "Running"), 0, rank_result()));
  Decision d = reconcile(in);
  EXPECT_EQ(status_after(in, d)["phase"], phase::kSucceeded);
  EXPECT_TRUE(actions_of<CreateObject>(d, ResourceKind::Job).empty());
  for (const auto& c : actions_of<CreateObject>(d)) EXPECT_NE(c.name, "demo.export");
  EXPECT_TRUE(exported(status_after(in, d)).is_null());
}

TEST(ExportPolicy, TtlWaitsForTheExportThenDeletesTheJob) {
  json ttl = {{"ttlSecondsAfterFinished", 60}};
  Observed in = observe(succeeded_status(100));
  in.job["spec"]["runPolicy"].merge_patch(ttl);
  in.export_job = make_export_job(in.job);
  Decision running = reconcile(in);
  EXPECT_FALSE(deletes_job(running)) << "TTL due, but the export Job would go with the job";
  EXPECT_LT(running.requeue_after_s, 0) << "the export Job's status change brings the next pass";

  in.export_job = make_export_job(in.job, "Complete");
  in.export_pods = {make_export_pod(*in.export_job, 0, kResultMessage)};
  EXPECT_TRUE(deletes_job(reconcile(in))) << "exported: the TTL (due) applies";

  in.export_job = make_export_job(in.job, "Failed");
  in.export_pods = {make_export_pod(*in.export_job, 4, kNoCheckpoint)};
  EXPECT_TRUE(deletes_job(reconcile(in))) << "failed for good: the TTL applies too";
}

TEST(ExportPolicy, TtlNotDueAfterTheExportRequeuesForTheRest) {
  Observed in = observe(succeeded_status(10));
  in.job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60;
  in.export_job = make_export_job(in.job, "Complete");
  in.export_pods = {make_export_pod(*in.export_job, 0, kResultMessage)};
  Decision d = reconcile(in);
  EXPECT_FALSE(deletes_job(d));
  EXPECT_DOUBLE_EQ(d.requeue_after_s, 50);
}

TEST(ExportPolicy, ARefusedJobIsReportedRetriedAndHoldsTheTtl) {
  Observed in = observe(succeeded_status(100));
  in.job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60;
  in.refusal = CreationRefusal{ResourceKind::Job, "demo-export", 403, "Forbidden",
                               "jobs.batch is forbidden: User cannot create resource"};
  Decision d = reconcile(in);
  const json c = exported(status_after(in, d));
  EXPECT_EQ(c["reason"], reason::kExportJobRefused);
  EXPECT_NE(c["message"].get<std::string>().find("HTTP 403"), std::string::npos);
  EXPECT_EQ(actions_of<CreateObject>(d, ResourceKind::Job).size(), 1u) << "retried";
  EXPECT_FALSE(deletes_job(d));
  EXPECT_EQ(events(d), std::vector<std::string>{reason::kExportJobRefused});
}

TEST(ExportPolicy, AnExportedModelIsNotExportedAgainWhenItsJobIsDeleted) {
  Observed in = observe(succeeded_status());
  in.export_job = make_export_job(in.job, "Complete");
  in.export_pods = {make_export_pod(*in.export_job, 0, kResultMessage)};
  advance(in, reconcile(in));
  in.export_job.reset();
  in.export_pods.clear();
  Decision d = reconcile(in);
  EXPECT_TRUE(actions_of<CreateObject>(d, ResourceKind::Job).empty());
  EXPECT_FALSE(writes_status(d));
}

TEST(ExportPolicy, DeletingAFailedExportJobTriesAgain) {
  Observed in = observe(succeeded_status());
  in.export_job = make_export_job(in.job, "Failed");
  in.export_pods = {make_export_pod(*in.export_job, 1, "disk full")};
  advance(in, reconcile(in));
  in.export_job.reset();
  in.export_pods.clear();
  Decision d = reconcile(in);
  EXPECT_EQ(actions_of<CreateObject>(d, ResourceKind::Job).size(), 1u);
  EXPECT_EQ(exported(status_after(in, d))["reason"], reason::kExportRunning);
  EXPECT_EQ(events(d), std::vector<std::string>{reason::kExportStarted});
}

TEST(ExportPolicy, ChangedSettingsReplaceTheJob) {
  Observed in = observe(succeeded_status());
  in.export_job = make_export_job(in.job, "Complete");  // made for format hf, dtype fp32
  in.export_pods = {make_export_pod(*in.export_job, 0, kResultMessage)};
  advance(in, reconcile(in));
  in.job["spec"]["export"]["dtype"] = "bf16";
  Decision d = reconcile(in);
  const auto deletes = actions_of<DeleteObject>(d, ResourceKind::Job);
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].name, "demo-export");
  EXPECT_EQ(deletes[0].uid, "export-uid-1") << "only the incarnation observed";
  EXPECT_TRUE(actions_of<CreateObject>(d, ResourceKind::Job).empty()) << "the name is taken until it is gone";
  const json st = status_after(in, d);
  EXPECT_EQ(exported(st)["reason"], reason::kExportRunning);
  EXPECT_FALSE(st.contains("export"));
  // Gone: the new Job, with the new settings.
  advance(in, d);
  in.export_job.reset();
  in.export_pods.clear();
  const auto created = actions_of<CreateObject>(reconcile(in), ResourceKind::Job);
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0].object["metadata"]["annotations"][kExportSettingsAnnotation], "format=hf,dtype=bf16,path=model");
}

TEST(ExportPolicy, AnEmptyDirCheckpointHasNothingToExport) {
  Observed in = observe(succeeded_status());
  in.job["spec"]["checkpoint"] = {{"volumeSource", {{"emptyDir", json::object()}}}};
  Decision d = reconcile(in);
  EXPECT_TRUE(actions_of<CreateObject>(d, ResourceKind::Job).empty());
  EXPECT_EQ(exported(status_after(in, d))["reason"], reason::kExportFailed);
}

TEST(ExportPolicy, RemovingSpecExportDropsAnUnfinishedExportsCondition) {
  Observed in = observe(running_status());
  advance(in, reconcile(in));
  in.job["spec"].erase("export");
  EXPECT_TRUE(exported(status_after(in, reconcile(in))).is_null());
}

// ---- the Job and its NetworkPolicy ------------------------------------------------------------

TEST(ExportJob, RunsPpuExportOnTheCheckpointVolumeOwnedByTheJob) {
  json job = with_export(make_job("demo", 2), {{"format", "ppu"}, {"dtype", "bf16"}, {"path", "models/final"}});
  json x = build_export_job(parse_job(job));
  EXPECT_EQ(x["apiVersion"], "batch/v1");
  EXPECT_EQ(x["kind"], "Job");
  EXPECT_EQ(x["metadata"]["name"], "demo-export");
  EXPECT_EQ(x["metadata"]["labels"]["ppu.dev/job"], "demo") << "its changes bring a pass of the PPUJob";
  EXPECT_EQ(x["metadata"]["ownerReferences"][0]["uid"], "0123456789abcdef");
  EXPECT_EQ(x["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(x["spec"]["backoffLimit"], kExportBackoffLimit);
  EXPECT_EQ(x["spec"]["activeDeadlineSeconds"], 3600);
  const json& rule = x["spec"]["podFailurePolicy"]["rules"][0];
  EXPECT_EQ(rule["action"], "FailJob");
  EXPECT_EQ(rule["onExitCodes"]["values"], json::array({2, 4})) << "usage error, no valid checkpoint: no retry";
  const json& disrupted = x["spec"]["podFailurePolicy"]["rules"][1];
  EXPECT_EQ(disrupted["action"], "Ignore");
  EXPECT_EQ(disrupted["onPodConditions"][0], (json{{"type", "DisruptionTarget"}, {"status", "True"}}));
  const json& pod = x["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["labels"], (json{{"ppu.dev/export", "demo"}})) << "not ppu.dev/job: not a rank";
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "ppu:test");
  EXPECT_EQ(c["command"], json::array({"ppu-export"}));
  EXPECT_EQ(c["args"], json::array({"--checkpoint", "/checkpoints", "--out", "/checkpoints/models/final", "--format",
                                    "ppu", "--dtype", "bf16"}));
  EXPECT_EQ(c["terminationMessagePath"], "/dev/termination-log");
  EXPECT_EQ(c["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], "ckpt");
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/checkpoints");
  EXPECT_FALSE(c["volumeMounts"][0].contains("readOnly")) << "the model is written there";
}

TEST(ExportJob, ReadsS3CheckpointsWithTheTrainingSectionsServiceAndTheSecret) {
  json job = with_export(make_job("demo", 2));
  job["spec"]["training"]["checkpoint"] = {
      {"dir", "s3://ckpt/runs/demo"}, {"s3_endpoint", "http://seaweedfs:8333"}, {"s3_path_style", false}};
  job["spec"]["checkpointSecret"] = "demo-s3";
  const json c = build_export_job(parse_job(job))["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["args"],
            json::array({"--checkpoint", "s3://ckpt/runs/demo", "--s3-endpoint", "http://seaweedfs:8333",
                         "--s3-virtual-hosted", "--out", "/checkpoints/model", "--format", "hf", "--dtype", "fp32"}));
  EXPECT_EQ(c["envFrom"][0]["secretRef"]["name"], "demo-s3");
}

TEST(ExportJob, SharesTheRankPodsSecurityVolumesAndSchedulingButNotTheirDevices) {
  json job = with_export(make_job("demo", 2));
  job["spec"]["podSecurityContext"] = {{"runAsUser", 1000}, {"runAsNonRoot", true}, {"fsGroup", 1000}};
  job["spec"]["securityContext"] = {{"allowPrivilegeEscalation", false}, {"readOnlyRootFilesystem", true}};
  job["spec"]["scheduling"] = {{"serviceAccountName", "trainer"}, {"nodeSelector", {{"pool", "train"}}}};
  job["spec"]["data"] = {{"claimName", "corpus"}, {"mountPath", "/data"}};
  job["spec"]["imagePullPolicy"] = "Never";
  job["spec"]["resources"] = {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", 1}}},
                              {"limits", {{"memory", "16Gi"}, {"nvidia.com/gpu", 1}}}};
  const JobSpec s = parse_job(job);
  const json rank = testing::rank_pod(s, 0, 0)["spec"];
  const json pod = build_export_job(s)["spec"]["template"]["spec"];
  for (const char* k : {"securityContext", "serviceAccountName", "nodeSelector", "automountServiceAccountToken"})
    EXPECT_EQ(pod[k], rank[k]) << k;
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["securityContext"], rank["containers"][0]["securityContext"]);
  EXPECT_EQ(c["imagePullPolicy"], "Never");
  EXPECT_EQ(c["resources"], (json{{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}, {"limits", {{"memory", "16Gi"}}}}))
      << "the ranks' cpu and memory, no GPU";
  // The rank pod's volumes less its config: the data volume read-only at the same path, so the
  // dataset path the checkpoint's config records resolves (the tokenizer comes from it).
  json rank_volumes = rank["volumes"];
  rank_volumes.erase(rank_volumes.begin());
  EXPECT_EQ(pod["volumes"], rank_volumes);
  json rank_mounts = rank["containers"][0]["volumeMounts"];
  rank_mounts.erase(rank_mounts.begin());
  EXPECT_EQ(c["volumeMounts"], rank_mounts);

  job["spec"]["export"]["resources"] = {{"limits", {{"memory", "4Gi"}}}};
  EXPECT_EQ(build_export_job(parse_job(job))["spec"]["template"]["spec"]["containers"][0]["resources"],
            (json{{"limits", {{"memory", "4Gi"}}}}))
      << "spec.export.resources replaces them";
}

TEST(ExportJob, DefaultSecurityIsTheRestrictedOne) {
  const json pod = build_export_job(parse_job(with_export(make_job("demo", 2))))["spec"]["template"]["spec"];
  EXPECT_EQ(pod["securityContext"], default_pod_security_context());
  EXPECT_EQ(pod["containers"][0]["securityContext"], default_container_security_context());
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  EXPECT_FALSE(pod["containers"][0].contains("resources")) << "the ranks asked for none";
}

TEST(ExportJob, NetworkPolicyAdmitsNothingAndOnlyTheExportPodIsItsOwn) {
  const JobSpec s = parse_job(with_export(make_job("demo", 2)));
  const json np = build_export_network_policy(s);
  EXPECT_EQ(np["metadata"]["name"], "demo.export");
  EXPECT_EQ(np["spec"]["podSelector"]["matchLabels"], (json{{"ppu.dev/export", "demo"}}));
  EXPECT_EQ(np["spec"]["policyTypes"], json::array({"Ingress"}));
  EXPECT_FALSE(np["spec"].contains("ingress")) << "no rule: no ingress at all";
  // Neither the ranks' policy nor their Service selects the export pod.
  const json labels = build_export_job(s)["spec"]["template"]["metadata"]["labels"];
  for (const json& selector :
       {build_network_policy(s, {})["spec"]["podSelector"]["matchLabels"], build_service(s)["spec"]["selector"]})
    for (const auto& [k, v] : selector.items()) {
      EXPECT_FALSE(labels.contains(k) && labels[k] == v) << k;
    }
}

TEST(ExportJob, CheckpointVolumesThatOutliveThePods) {
  auto persists = [](const json& checkpoint) {
    json job = make_job("demo", 2);
    if (!checkpoint.is_null()) job["spec"]["checkpoint"] = checkpoint;
    return checkpoint_volume_persists(parse_job(job));
  };
  EXPECT_TRUE(persists({{"claimName", "ckpt"}}));
  EXPECT_TRUE(persists({{"volumeSource", {{"nfs", {{"server", "nfs"}, {"path", "/x"}}}}}}));
  EXPECT_FALSE(persists(json()));
  EXPECT_FALSE(persists({{"volumeSource", json::object()}}));
  EXPECT_FALSE(persists({{"volumeSource", {{"emptyDir", json::object()}}}}));
  EXPECT_FALSE(persists({{"volumeSource", {{"ephemeral", {{"volumeClaimTemplate", json::object()}}}}}}));
  json job = make_job("demo", 2);
  job["spec"]["checkpoint"] = {{"volumeSource", {{"persistentVolumeClaim", {{"claimName", "c2"}}}}}};
  EXPECT_EQ(checkpoint_claim_name(parse_job(job)), "c2");
}

// ---- ppu-export's report ----------------------------------------------------------------------

TEST(ExportResult, ParsesExactlyVersion1) {
  // Version 1 on the wire, as released images write it (keys sorted): a change of the writer that
  // changes these bytes needs a new version. Any key order parses.
  EXPECT_EQ(kResultMessage, R"({"dtype":"fp32","format":"hf","path":"/checkpoints/model","ppu_export":1,"round":10})");
  EXPECT_TRUE(
      parse_export_result(R"({"ppu_export":1,"format":"hf","dtype":"fp32","path":"/checkpoints/model","round":10})"));
  auto r = parse_export_result(kResultMessage);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->format, "hf");
  EXPECT_EQ(r->dtype, "fp32");
  EXPECT_EQ(r->path, "/checkpoints/model");
  EXPECT_EQ(r->round, 10);
  EXPECT_FALSE(parse_export_result(R"({"ppu_export":2,"format":"hf","dtype":"fp32","path":"/m","round":1})"));
  EXPECT_FALSE(parse_export_result(R"({"ppu_export":1,"format":"hf","dtype":"fp32","path":"/m"})"));
  EXPECT_FALSE(parse_export_result(R"({"ppu_export":1,"format":"hf","dtype":"fp32","path":"/m","round":"1"})"));
  EXPECT_FALSE(parse_export_result(kNoCheckpoint));
  EXPECT_FALSE(parse_export_result(R"({"ppu_export":1,"format":"hf")"));  // truncated
  EXPECT_FALSE(parse_export_result(""));
}

// Writer and reader share one definition (core/export_result.h) and one versioning scheme with
// the run result (core/result_message.h): each message names its kind, so neither passes as the other.
TEST(ExportResult, RoundTripsAndIsNeverTakenForARunResult) {
  const ExportResult r{"hf", "bf16", "/checkpoints/model", 12};
  const std::string msg = format_export_result(r);
  const auto back = parse_export_result(msg);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->format, "hf");
  EXPECT_EQ(back->dtype, "bf16");
  EXPECT_EQ(back->path, "/checkpoints/model");
  EXPECT_EQ(back->round, 12);
  EXPECT_FALSE(parse_run_result(msg));
  RunResult run;
  run.checksum = "7905be7a33aa0be4";
  EXPECT_FALSE(parse_export_result(format_run_result(run)));
  // The key before the shared scheme (an older image's message) is not this version.
  EXPECT_FALSE(parse_export_result(R"({"version":1,"format":"hf","dtype":"fp32","path":"/m","round":1})"));
  EXPECT_THROW(format_export_result({"hf", "fp32", std::string(2000, 'p'), 1}), std::length_error);
}

TEST(ExportResult, JobStateFromItsConditions) {
  json job = make_export_job(with_export(make_job("demo", 2)));
  EXPECT_EQ(export_state(job), ExportState::Running);
  job["status"]["conditions"] = json::array({{{"type", "FailureTarget"}, {"status", "True"}}});
  EXPECT_EQ(export_state(job), ExportState::Running) << "failing, its pods still terminating";
  job["status"]["conditions"].push_back({{"type", "Failed"}, {"status", "True"}, {"reason", "DeadlineExceeded"}});
  EXPECT_EQ(export_state(job), ExportState::Failed);
  EXPECT_EQ(export_job_failure(job), "DeadlineExceeded");
  job["status"]["conditions"] =
      json::array({{{"type", "SuccessCriteriaMet"}, {"status", "True"}}, {{"type", "Complete"}, {"status", "True"}}});
  EXPECT_EQ(export_state(job), ExportState::Succeeded);
}

TEST(ExportMetrics, JobsByExportReasonCoverEveryReason) {
  OperatorMetrics m;
  m.set_exports_by_reason({{reason::kModelExported, 2}});
  const std::string text = prometheus::TextSerializer().Serialize(m.registry()->Collect());
  for (const char* r : reason::kExportReasons)
    EXPECT_NE(text.find(std::string("ppu_operator_job_exports{reason=\"") + r + "\"}"), std::string::npos) << r;
  EXPECT_NE(text.find("ppu_operator_job_exports{reason=\"ModelExported\"} 2"), std::string::npos) << text;
}

}  // namespace
}  // namespace ppu::op
