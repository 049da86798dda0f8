// Unit tests of the whole controller loop (informers -> work queue -> reconcile -> executor)
// against FakeKube: a job gets its gang, a failed rank restarts it once, and the gang-restart
// counter counts that restart exactly once (from the decision, not from an event's text); a job
// with spec.export gets one export Job when it succeeds, and that Job's pod and status, seen
// through their own informers, make the model's place the job's status; with --kueue a queued job
// gets its Workload and no pod until Kueue (played by the test) admits it, and the waiting gauge
// counts it meanwhile; a live job's rank stuck terminating on a node that stops answering is
// force-deleted once the node's change arrives, and replaced.
#include <gtest/gtest.h>

#include <prometheus/text_serializer.h>

#include <chrono>
#include <thread>

#include "controller/controller.h"
#include "core/export_result.h"
#include "core/run_result.h"
#include "kube/fake_kube.h"
#include "kube/rfc3339.h"
#include "metrics/operator_metrics.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"
#include "reconcile/job_status.h"
#include "test_objects.h"
#include "wait_until.h"

namespace ppu::op {
namespace {

using testing::FakeKube;

template <class Pred>
bool eventually(Pred pred) {
  return testing::wait_until(pred, 30);
}

double gang_restarts(const OperatorMetrics& m) {
  for (const auto& f : m.registry()->Collect())
    if (f.name == "ppu_operator_gang_restarts_total" && !f.metric.empty()) return f.metric[0].counter.value;
  return -1;
}

// The kubelet's part, which FakeKube does not play: set a pod's phase (and exit code).
void set_phase(FakeKube& kube, const std::string& name, const std::string& phase, int exit_code = -1) {
  auto pod = kube.peek(ResourceKind::Pod, "ns1", name);
  ASSERT_TRUE(pod.has_value()) << name;
  (*pod)["status"]["phase"] = phase;
  if (phase == pod_phase_name::kRunning)
    (*pod)["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  if (exit_code >= 0)
    (*pod)["status"]["containerStatuses"] =
        json::array({{{"name", "ppu-train"}, {"state", {{"terminated", {{"exitCode", exit_code}}}}}}});
  kube.put(ResourceKind::Pod, *pod);
}

std::string job_phase(FakeKube& kube) {
  auto job = kube.peek(ResourceKind::PPUJob, "ns1", "demo");
  if (!job || !job->contains("status")) return "";
  return (*job)["status"].value("phase", "");
}

TEST(ControllerLoop, CreatesTheGangRestartsItOnceAndCountsTheRestartOnce) {
  FakeKube kube;
  json job = testing::make_job("demo", 2);
  job["metadata"].erase("uid");
  job["metadata"].erase("resourceVersion");
  job["spec"]["runPolicy"]["backoffLimit"] = 3;
  kube.put(ResourceKind::PPUJob, job);

  OperatorMetrics metrics;
  ControllerOptions opts;
  opts.workers = 2;
  opts.reconcile.restart_backoff_s = 0;  // recreate at once: the test waits for states, not times
  opts.reconcile.restart_backoff_max_s = 0;
  Controller c(kube, opts, &metrics);
  c.start_informers();
  c.start_workers();

  ASSERT_TRUE(eventually([&] { return kube.objects(ResourceKind::Pod, "ns1").size() == 2; }));
  EXPECT_EQ(kube.objects(ResourceKind::Service, "ns1").size(), 1u);
  EXPECT_EQ(kube.objects(ResourceKind::ConfigMap, "ns1").size(), 1u);
  EXPECT_EQ(kube.objects(ResourceKind::NetworkPolicy, "ns1").size(), 1u);
  set_phase(kube, "demo-rank-0", pod_phase_name::kRunning);
  set_phase(kube, "demo-rank-1", pod_phase_name::kRunning);
  ASSERT_TRUE(eventually([&] { return job_phase(kube) == phase::kRunning; })) << job_phase(kube);
  EXPECT_EQ(gang_restarts(metrics), 0);

  const std::string uid_before = (*kube.peek(ResourceKind::Pod, "ns1", "demo-rank-0"))["metadata"]["uid"];
  set_phase(kube, "demo-rank-1", pod_phase_name::kFailed, 1);
  // The old gang is deleted and a new one created (FakeKube deletes at once, like a pod without
  // finalizers); then the job waits in Pending for its ranks.
  ASSERT_TRUE(eventually([&] {
    auto p = kube.peek(ResourceKind::Pod, "ns1", "demo-rank-0");
    return p && (*p)["metadata"]["uid"] != uid_before && kube.objects(ResourceKind::Pod, "ns1").size() == 2 &&
           job_phase(kube) == phase::kPending;
  })) << job_phase(kube);
  auto stored = kube.peek(ResourceKind::PPUJob, "ns1", "demo");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["status"]["restartCount"], 1);
  EXPECT_EQ(gang_restarts(metrics), 1);

  int restart_events = 0;
  for (const auto& e : kube.objects(ResourceKind::Event, "ns1"))
    if (e["reason"] == reason::kGangRestart) ++restart_events;
  EXPECT_EQ(restart_events, 1);
  c.stop();
  EXPECT_EQ(gang_restarts(metrics), 1) << "one restart, counted once";
}

TEST(ControllerLoop, ExportsOnceTheJobSucceededAndRecordsWhereTheModelIs) {
  FakeKube kube;
  json job = testing::with_export(testing::make_job("demo", 2));
  job["metadata"].erase("uid");
  job["metadata"].erase("resourceVersion");
  kube.put(ResourceKind::PPUJob, job);
  OperatorMetrics metrics;
  ControllerOptions opts;
  opts.workers = 2;
  Controller c(kube, opts, &metrics);
  c.start_informers();
  c.start_workers();

  ASSERT_TRUE(eventually([&] { return kube.objects(ResourceKind::Pod, "ns1").size() == 2; }));
  RunResult result;
  result.round = 10;
  result.perplexity = 9.5;
  result.checkpoint_round = 10;
  result.checksum = "00ff00ff00ff00ff";
  for (const char* name : {"demo-rank-0", "demo-rank-1"}) {
    auto pod = kube.peek(ResourceKind::Pod, "ns1", name);
    ASSERT_TRUE(pod.has_value()) << name;
    (*pod)["status"] = {
        {"phase", pod_phase_name::kSucceeded},
        {"containerStatuses",
         json::array({{{"name", "ppu-train"},
                       {"state", {{"terminated", {{"exitCode", 0}, {"message", format_run_result(result)}}}}}}})}};
    kube.put(ResourceKind::Pod, *pod);
  }
  ASSERT_TRUE(eventually([&] { return job_phase(kube) == phase::kSucceeded; })) << job_phase(kube);
  ASSERT_TRUE(eventually([&] { return kube.peek(ResourceKind::Job, "ns1", "demo-export").has_value(); }));
  EXPECT_TRUE(kube.peek(ResourceKind::NetworkPolicy, "ns1", "demo.export").has_value());

  // The Job controller's part: its pod ends with ppu-export's report, then the Job is Complete.
  json x = *kube.peek(ResourceKind::Job, "ns1", "demo-export");
  kube.put(ResourceKind::Pod,
           testing::make_export_pod(x, 0, ppu::format_export_result({"hf", "fp32", "/checkpoints/model", 10})));
  x["status"] = {{"conditions", json::array({{{"type", "Complete"}, {"status", "True"}}})},
                 {"completionTime", format_rfc3339(now_seconds())}};
  kube.put(ResourceKind::Job, x);

  ASSERT_TRUE(eventually([&] {
    auto j = kube.peek(ResourceKind::PPUJob, "ns1", "demo");
    return j && j->contains("status") && (*j)["status"].contains("export") &&
           (*j)["status"]["export"].value("round", -1) == 10;
  })) << kube.peek(ResourceKind::PPUJob, "ns1", "demo")->dump();
  const json st = (*kube.peek(ResourceKind::PPUJob, "ns1", "demo"))["status"];
  const auto exported = testing::condition_of(st, condition::kExported);
  ASSERT_TRUE(exported);
  EXPECT_EQ((*exported)["status"], "True");
  EXPECT_EQ(st["phase"], phase::kSucceeded);
  EXPECT_EQ(kube.objects(ResourceKind::Job, "ns1").size(), 1u) << "one export Job";
  EXPECT_TRUE(eventually([&] {
    const std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
    return text.find("ppu_operator_job_exports{reason=\"ModelExported\"} 1") != std::string::npos;
  }));
  c.stop();
}

TEST(ControllerLoop, AQueuedJobHasNoPodUntilKueueAdmitsItsWorkload) {
  FakeKube kube;
  json job = testing::make_job("demo", 2);
  job["metadata"].erase("uid");
  job["metadata"].erase("resourceVersion");
  job["metadata"]["labels"] = {{kQueueNameLabel, "team-a"}};
  kube.put(ResourceKind::PPUJob, job);
  OperatorMetrics metrics;
  ControllerOptions opts;
  opts.workers = 2;
  opts.reconcile.kueue = true;
  Controller c(kube, opts, &metrics);
  c.start_informers();
  c.start_workers();

  ASSERT_TRUE(eventually([&] { return kube.peek(ResourceKind::Workload, "ns1", "ppujob-demo").has_value(); }));
  const auto waiting = [&](int n) {
    const std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
    return text.find("ppu_operator_jobs_waiting_for_admission " + std::to_string(n)) != std::string::npos;
  };
  ASSERT_TRUE(eventually([&] { return waiting(1); }));
  EXPECT_TRUE(kube.objects(ResourceKind::Pod, "ns1").empty()) << "no rank pod before admission";

  // Kueue's part: quota reserved and the Workload admitted.
  json w = *kube.peek(ResourceKind::Workload, "ns1", "ppujob-demo");
  EXPECT_EQ(w["spec"]["podSets"][0]["count"], 2);
  const std::string now = format_rfc3339(now_seconds());
  w["status"] = {{"admission", {{"clusterQueue", "cq"}}},
                 {"conditions", json::array({{{"type", "QuotaReserved"},
                                              {"status", "True"},
                                              {"reason", "QuotaReserved"},
                                              {"message", ""},
                                              {"lastTransitionTime", now}},
                                             {{"type", "Admitted"},
                                              {"status", "True"},
                                              {"reason", "Admitted"},
                                              {"message", ""},
                                              {"lastTransitionTime", now}}})}};
  kube.put(ResourceKind::Workload, w);
  ASSERT_TRUE(eventually([&] { return kube.objects(ResourceKind::Pod, "ns1").size() == 2; }));
  EXPECT_TRUE(eventually([&] { return waiting(0); }));
  c.stop();
}

double counter(const OperatorMetrics& m, const std::string& name) {
  for (const auto& f : m.registry()->Collect())
    if (f.name == name && !f.metric.empty()) return f.metric[0].counter.value;
  return -1;
}

json node(const std::string& ready) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", "n1"}}},
          {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", ready}}})}}}};
}

TEST(ControllerLoop, ALiveRankStuckOnANodeThatStopsAnsweringIsForceDeletedAndReplaced) {
  FakeKube kube;
  kube.put(ResourceKind::Node, node("True"));
  json job = testing::make_job("demo", 2);
  job["metadata"].erase("uid");
  job["metadata"].erase("resourceVersion");
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  kube.put(ResourceKind::PPUJob, job);
  OperatorMetrics metrics;
  ControllerOptions opts;
  opts.workers = 2;
  Controller c(kube, opts, &metrics);
  c.start_informers();
  c.start_workers();
  ASSERT_TRUE(eventually([&] { return kube.objects(ResourceKind::Pod, "ns1").size() == 3; })) << "ranks and store";
  for (const char* p : {"demo-rank-0", "demo-rank-1", "demo-rendezvous"}) set_phase(kube, p, pod_phase_name::kRunning);
  ASSERT_TRUE(eventually([&] { return job_phase(kube) == phase::kRunning; }));

  // The kubelet's node and the node lifecycle controller's part: rank 1 is bound to n1 and was
  // deleted (its grace period over), and n1 is Ready: its kubelet will finish the pod. Waited for.
  json stuck = *kube.peek(ResourceKind::Pod, "ns1", "demo-rank-1");
  const std::string old_uid = stuck["metadata"]["uid"];
  stuck["spec"]["nodeName"] = "n1";
  stuck["metadata"]["deletionTimestamp"] = format_rfc3339(now_seconds() - 1);
  kube.put(ResourceKind::Pod, stuck);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(kube.peek(ResourceKind::Pod, "ns1", "demo-rank-1").has_value());
  EXPECT_EQ(kube.count_calls("delete pods/ns1/demo-rank-1"), 0);

  // n1 stops answering: the node's own change brings the pass that force-deletes the pod.
  kube.put(ResourceKind::Node, node("Unknown"));
  ASSERT_TRUE(eventually([&] {
    auto p = kube.peek(ResourceKind::Pod, "ns1", "demo-rank-1");
    return p && (*p)["metadata"]["uid"] != old_uid;
  })) << "rank 1 not replaced";
  EXPECT_GE(kube.count_calls("delete pods/ns1/demo-rank-1 grace=0"), 1);
  ASSERT_TRUE(eventually([&] { return counter(metrics, "ppu_operator_pod_force_deletions_total") == 1; }));
  int forced = 0;
  for (const auto& e : kube.objects(ResourceKind::Event, "ns1"))
    if (e["reason"] == reason::kPodForceDeleted) ++forced;
  EXPECT_EQ(forced, 1);
  const auto stored = kube.peek(ResourceKind::PPUJob, "ns1", "demo");
  EXPECT_EQ((*stored)["status"]["recoveries"], 1);
  EXPECT_EQ((*stored)["status"]["restartCount"], 0);
  c.stop();
}

}  // namespace
}  // namespace ppu::op
