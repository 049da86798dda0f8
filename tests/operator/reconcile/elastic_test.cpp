// Unit tests of an elastic PPUJob (spec.elastic, docs/RESIZE.md): its pods' WORLD_SIZE is
// maxReplicas and spec.replicas of its slots get pods; the training config carries
// network.min_ranks and the ConfigMap the desired size, which the rendezvous store reads from its
// volume; a shrink leaves the running ranks above the size to retire (deleting one would be a
// notice) and removes the others; a grow creates the new slots without counting them as losses,
// and a slot whose rank retired before the job grew back gets a pod again;
// a resize is an event and status.lastResize; Degraded only below minReplicas; a queued job asks
// Kueue for maxReplicas pods.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config.h"
#include "reconcile/job_constants.h"
#include "reconcile/kueue_workload.h"
#include "reconcile/reconciler.h"
#include "reconcile/rendezvous.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::condition_of;
using testing::count_events;
using testing::created_pods;
using testing::deleted_pods;
using testing::gang;
using testing::make_job;
using testing::make_pod;
using testing::observed_live;
using testing::running_status;
using testing::status_after;
using testing::with_exit;

// 8 slots, at least 2 ranks, `replicas` of them filled; N = 2, recovery live.
json elastic_job(int replicas, json status = running_status(0)) {
  json job = make_job("demo", replicas, std::move(status));
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  job["spec"]["elastic"] = {{"minReplicas", 2}, {"maxReplicas", 8}};
  return job;
}

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e["value"].get<std::string>();
  return "<unset>";
}

TEST(Elastic, PodsSeeTheSlotsAsWorldSizeAndTheConfigTheFloor) {
  const JobSpec j = parse_job(elastic_job(4));
  EXPECT_EQ(slots(j), 8);
  EXPECT_EQ(required_replicas(j), 2);
  EXPECT_EQ(env_of(testing::rank_pod(j, 3), contract::env::kWorldSize), "8");
  const Config c = parse_config(render_training_config(j));
  EXPECT_EQ(c.ranks, 8);
  EXPECT_EQ(c.network.min_ranks, 2);
  validate_config(c, 8);  // what every rank checks first
  const json data = config_map_data(j);
  EXPECT_EQ(data.at(kDesiredRanksKey), "4");
  // A job that is not elastic has no desired size and its replicas as WORLD_SIZE.
  const JobSpec fixed = parse_job(make_job("demo", 4));
  EXPECT_EQ(slots(fixed), 4);
  EXPECT_FALSE(config_map_data(fixed).contains(kDesiredRanksKey));
  EXPECT_EQ(parse_config(render_training_config(fixed)).network.min_ranks, 0);
}

TEST(Elastic, TheStoreReadsTheDesiredSizeFromTheConfigMapVolume) {
  const json pod = build_rendezvous_pod(parse_job(elastic_job(4)), 0);
  const json& c = pod["spec"]["containers"][0];
  const std::vector<std::string> cmd = c["command"].get<std::vector<std::string>>();
  ASSERT_GE(cmd.size(), 2u);
  EXPECT_EQ(cmd[cmd.size() - 2], "--desired-file");
  EXPECT_EQ(cmd.back(), kDesiredRanksPath);
  bool mounted = false;
  for (const auto& m : c["volumeMounts"]) mounted = mounted || m["mountPath"] == kConfigDir;
  EXPECT_TRUE(mounted) << c["volumeMounts"].dump();
  const json fixed = build_rendezvous_pod(parse_job(make_job("demo", 4)), 0);
  EXPECT_EQ(fixed["spec"]["containers"][0]["command"].size(), 3u);  // ppu-rendezvous --port P
}

TEST(Elastic, AGrowCreatesTheNewSlotsWithoutCountingLosses) {
  // Running at 4, spec.replicas now 6: slots 4 and 5 get pods, no recovery is counted.
  json status = running_status(0);
  status["desiredReplicas"] = 4;
  const json job = elastic_job(6, status);
  Observed in = observed_live(job, gang(job, 4, "Running"));
  in.config_map = build_config_map(parse_job(elastic_job(4)));  // as written before the resize
  const Decision d = reconcile(in);
  EXPECT_EQ(created_pods(d), (std::vector<std::string>{"demo-rank-4", "demo-rank-5"}));
  const json st = status_after(observed_live(job, {}), d);
  EXPECT_EQ(st.value("recoveries", 0), 0) << st.dump();
  EXPECT_EQ(st["desiredReplicas"], 6);
  EXPECT_EQ(st["lastResize"]["from"], 4);
  EXPECT_EQ(st["lastResize"]["to"], 6);
  EXPECT_EQ(st["resizes"].size(), 1u) << st.dump();
  EXPECT_EQ(st["resizes"][0]["to"], 6);
  EXPECT_EQ(count_events(d, reason::kResized), 1);
  // The ConfigMap follows the size, for the store's volume.
  bool patched = false;
  for (const auto& p : actions_of<PatchObject>(d, ResourceKind::ConfigMap))
    patched = patched || p.patch["data"].value(kDesiredRanksKey, "") == "6";
  EXPECT_TRUE(patched);
}

// The pod's annotation after the ConfigMap's data: {name, annotation} of each patch of a pod.
std::vector<std::pair<std::string, std::string>> store_annotations(const Decision& d) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : actions_of<PatchObject>(d, ResourceKind::Pod))
    out.emplace_back(p.name, p.patch["metadata"]["annotations"].value(kDesiredRanksAnnotation, "<none>"));
  return out;
}

TEST(Elastic, TheStorePodIsAnnotatedWithTheSizeOnceTheConfigMapHasIt) {
  // Created with the size it starts at.
  EXPECT_EQ(build_rendezvous_pod(parse_job(elastic_job(4)), 0)["metadata"]["annotations"][kDesiredRanksAnnotation],
            "4");
  EXPECT_FALSE(build_rendezvous_pod(parse_job(make_job("demo", 4)), 0)["metadata"]["annotations"].contains(
      kDesiredRanksAnnotation));
  // spec.replicas 6 while the observed ConfigMap still says 4: the ConfigMap first, the pod not yet.
  json status = running_status(0);
  status["desiredReplicas"] = 6;
  const json job = elastic_job(6, status);
  Observed in = observed_live(job, gang(job, 6, "Running"));
  in.rendezvous_pod = observed_live(elastic_job(4), {}).rendezvous_pod;  // annotated 4
  in.config_map = build_config_map(parse_job(elastic_job(4)));
  EXPECT_TRUE(store_annotations(reconcile(in)).empty());
  // The ConfigMap has 6: the pod is patched to 6, once; then nothing more.
  in.config_map = build_config_map(parse_job(job));
  const Decision d = reconcile(in);
  EXPECT_EQ(store_annotations(d), (std::vector<std::pair<std::string, std::string>>{{"demo-rendezvous", "6"}}));
  in.rendezvous_pod = observed_live(job, {}).rendezvous_pod;
  EXPECT_TRUE(store_annotations(reconcile(in)).empty());
}

TEST(Elastic, AShrinkLetsRunningRanksRetireAndRemovesTheRest) {
  // Running at 6, spec.replicas now 4: rank 4 still runs (it retires at the next boundary), rank 5
  // is Pending (never started): only rank 5's pod is deleted.
  json status = running_status(0);
  status["desiredReplicas"] = 6;
  const json job = elastic_job(4, status);
  std::vector<json> pods = gang(job, 5, "Running");
  pods.push_back(make_pod(job, 5, "Pending"));
  const Decision d = reconcile(observed_live(job, pods));
  EXPECT_EQ(deleted_pods(d), (std::vector<std::string>{"demo-rank-5"}));
  EXPECT_TRUE(created_pods(d).empty());
  EXPECT_EQ(count_events(d, reason::kResized), 1);
  // Once rank 4 retired (exit 0), its pod goes too, and the job is not complete.
  std::vector<json> after = gang(job, 4, "Running");
  after.push_back(with_exit(make_pod(job, 4, "Running"), 0, "retired: the job shrank"));
  json later = elastic_job(4, running_status(0));
  later["status"]["desiredReplicas"] = 4;
  const Decision d2 = reconcile(observed_live(later, after));
  EXPECT_EQ(deleted_pods(d2), (std::vector<std::string>{"demo-rank-4"}));
  EXPECT_EQ(status_after(observed_live(later, after), d2)["phase"], phase::kRunning);
}

TEST(Elastic, ARankThatRetiredBeforeTheJobGrewBackIsCreatedAgain) {
  // Rank 3 retired at a boundary that saw a size of 3; spec.replicas is 4 again: its Succeeded pod
  // is removed so that its slot gets a pod again, and that is no loss. A rank that finished (its
  // result as the message) is left alone.
  json status = running_status(0);
  status["desiredReplicas"] = 4;
  const json job = elastic_job(4, status);
  std::vector<json> pods = gang(job, 3, "Running");
  pods.push_back(with_exit(make_pod(job, 3, "Running"), 0, "retired: the job shrank to 3 ranks"));
  const Decision d = reconcile(observed_live(job, pods));
  EXPECT_EQ(deleted_pods(d), (std::vector<std::string>{"demo-rank-3"}));
  EXPECT_EQ(status_after(observed_live(job, pods), d).value("recoveries", 0), 0);
  pods.back() = with_exit(make_pod(job, 3, "Running"), 0, testing::rank_result());
  EXPECT_TRUE(deleted_pods(reconcile(observed_live(job, pods))).empty());
}

TEST(Elastic, DegradedOnlyBelowMinReplicas) {
  json status = running_status(0);
  status["desiredReplicas"] = 4;
  status["liveRanks"] = 3;
  status["minSliceCoverage"] = "1.000";
  const json job = elastic_job(4, status);
  const auto in = observed_live(job, gang(job, 4, "Running"));
  const auto c = condition_of(status_after(in, reconcile(in)), condition::kDegraded);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["status"], "False") << c->dump();
  json below = status;
  below["liveRanks"] = 1;
  const json job2 = elastic_job(4, below);
  const auto in2 = observed_live(job2, gang(job2, 4, "Running"));
  const auto c2 = condition_of(status_after(in2, reconcile(in2)), condition::kDegraded);
  ASSERT_TRUE(c2);
  EXPECT_EQ((*c2)["status"], "True") << c2->dump();
}

TEST(Elastic, AQueuedJobAsksKueueForItsSlots) {
  const json w = build_workload(parse_job(elastic_job(4)), std::nullopt);
  EXPECT_EQ(w["spec"]["podSets"][0]["count"], 8);
}

}  // namespace
}  // namespace ppu::op
