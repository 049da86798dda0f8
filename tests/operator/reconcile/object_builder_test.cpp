// Unit tests of the objects a PPUJob owns: rendezvous env, DNS names, volumes, owner refs.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "core/job_contract.h"
#include "reconcile/object_builder.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e["value"].get<std::string>();
  return "<unset>";
}

TEST(ObjectBuilder, PodCarriesTheRendezvousContract) {
  JobSpec j = parse_job(testing::make_job("demo", 4));
  json pod = testing::rank_pod(j, 3, 0);
  EXPECT_EQ(pod["metadata"]["name"], "demo-rank-3");
  EXPECT_EQ(env_of(pod, "RANK"), "3");
  EXPECT_EQ(env_of(pod, "WORLD_SIZE"), "4");
  EXPECT_EQ(env_of(pod, "MASTER_ADDR"), "demo-rank-0.demo.ns1.svc");
  EXPECT_EQ(env_of(pod, "MASTER_PORT"), std::to_string(contract::kRendezvousPort));
  EXPECT_EQ(env_of(pod, "PPU_CONFIG"), "/etc/ppu/config.yaml");
  EXPECT_EQ(env_of(pod, "PPU_CHECKPOINT_DIR"), "/checkpoints");
  EXPECT_EQ(env_of(pod, "PPU_RUN_ID"), "ns1-demo-01234567");
  EXPECT_EQ(pod["spec"]["hostname"], "demo-rank-3");
  EXPECT_EQ(pod["spec"]["subdomain"], "demo");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["spec"]["containers"][0]["command"][0], "ppu-train");
  EXPECT_EQ(pod["spec"]["containers"][0]["ports"][1]["name"], "metrics");
  EXPECT_EQ(pod["metadata"]["labels"]["ppu.dev/job"], "demo");
  EXPECT_EQ(pod["metadata"]["labels"]["ppu.dev/rank"], "3");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "0123456789abcdef");
}

TEST(ObjectBuilder, CheckpointClaimAndSchedulingPassThrough) {
  json job = testing::make_job("demo", 2);
  job["spec"]["checkpoint"] = {{"claimName", "ckpt"}};
  job["spec"]["data"] = {{"volumeSource", {{"hostPath", {{"path", "/srv/data"}}}}}};
  job["spec"]["scheduling"] = {
      {"schedulerName", "volcano"}, {"nodeSelector", {{"gpu", "h100"}}}, {"priorityClassName", "high"}};
  job["spec"]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  json pod = testing::rank_pod(parse_job(job), 0, 0);
  const json& vols = pod["spec"]["volumes"];
  ASSERT_EQ(vols.size(), 4u);  // config, checkpoints, data, tmp
  EXPECT_EQ(vols[1]["persistentVolumeClaim"]["claimName"], "ckpt");
  EXPECT_EQ(vols[2]["hostPath"]["path"], "/srv/data");
  EXPECT_EQ(pod["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["gpu"], "h100");
  EXPECT_EQ(pod["spec"]["priorityClassName"], "high");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], 1);
}

// Each rank pod names the slice it trains (the runtime's plan: rank mod N); a live job asks the
// scheduler to put a slice's owners on different nodes, beside the user's own affinity terms, so
// that one lost node leaves every slice an owner.
TEST(ObjectBuilder, ALiveJobSpreadsEachSlicesOwnersOverNodes) {
  json job = testing::make_job("demo", 4);
  job["spec"]["training"] = {{"model", {{"preset", "tiny"}}},
                             {"method", "ppu"},
                             {"slicing", {{"mode", "mlp"}, {"slices", 2}}},
                             {"network", {{"recovery", "live"}}}};
  const json user_term = {
      {"weight", 1},
      {"podAffinityTerm",
       {{"topologyKey", "kubernetes.io/hostname"}, {"labelSelector", {{"matchLabels", {{"ppu.dev/job", "demo"}}}}}}}};
  job["spec"]["scheduling"] = {
      {"affinity", {{"podAntiAffinity", {{"preferredDuringSchedulingIgnoredDuringExecution", {user_term}}}}}}};
  for (int rank = 0; rank < 4; ++rank) {
    const json pod = testing::rank_pod(parse_job(job), rank, 0);
    const std::string slice = std::to_string(rank % 2);
    EXPECT_EQ(pod["metadata"]["labels"]["ppu.dev/slice"], slice) << "rank " << rank;
    const json& terms = pod["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
    ASSERT_EQ(terms.size(), 2u) << "the user's term and the slice's";
    EXPECT_EQ(terms[0], user_term);
    EXPECT_EQ(terms[1]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname");
    EXPECT_EQ(terms[1]["podAffinityTerm"]["labelSelector"]["matchLabels"],
              (json{{"ppu.dev/job", "demo"}, {"ppu.dev/slice", slice}}));
  }
  // Under gang recovery any loss restarts every rank: the label, no spreading.
  job["spec"]["training"]["network"]["recovery"] = "gang";
  const json gang_pod = testing::rank_pod(parse_job(job), 1, 0);
  EXPECT_EQ(gang_pod["metadata"]["labels"]["ppu.dev/slice"], "1");
  EXPECT_EQ(gang_pod["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].size(),
            1u);
  // One owner per slice (N = K), or nothing sliced: nothing to spread, no label.
  job["spec"]["training"]["network"]["recovery"] = "live";
  job["spec"]["training"]["slicing"]["slices"] = 4;
  EXPECT_FALSE(testing::rank_pod(parse_job(job), 1, 0)["metadata"]["labels"].contains("ppu.dev/slice"));
  job["spec"]["training"]["slicing"] = {{"mode", "none"}};
  EXPECT_FALSE(testing::rank_pod(parse_job(job), 1, 0)["metadata"]["labels"].contains("ppu.dev/slice"));
}

// The plan is the runtime's: every rank's slice, or none at all when the runtime would refuse the
// section (N does not divide K: its ranks exit 2 and say why).
TEST(ObjectBuilder, SharedSlicesIsTheRuntimesPlan) {
  json job = testing::make_job("demo", 6);
  job["spec"]["training"] = {
      {"model", {{"preset", "tiny"}}}, {"method", "ppu"}, {"slicing", {{"mode", "mlp"}, {"slices", 2}}}};
  EXPECT_EQ(shared_slices(parse_job(job)), (std::vector<int>{0, 1, 0, 1, 0, 1}));
  job["spec"]["training"]["slicing"]["slices"] = 4;
  EXPECT_TRUE(shared_slices(parse_job(job)).empty()) << "4 does not divide 6: the runtime refuses it, no plan";
}

// Kueue counts one template for the whole gang: it must not carry rank 0's identity (its rank
// and slice labels, hostname, or the anti-affinity to slice 0's other owners).
TEST(ObjectBuilder, TheGangsPodTemplateHasNoRanksIdentity) {
  json job = testing::make_job("demo", 4);
  job["spec"]["training"] = {{"model", {{"preset", "tiny"}}},
                             {"method", "ppu"},
                             {"slicing", {{"mode", "mlp"}, {"slices", 2}}},
                             {"network", {{"recovery", "live"}}}};
  const JobSpec j = parse_job(job);
  const json pod = build_rank_pod_template(j);
  const json& labels = pod["metadata"]["labels"];
  EXPECT_EQ(labels["ppu.dev/job"], "demo");
  EXPECT_FALSE(labels.contains("ppu.dev/rank"));
  EXPECT_FALSE(labels.contains("ppu.dev/slice"));
  EXPECT_FALSE(pod["spec"].contains("hostname"));
  EXPECT_FALSE(pod["spec"].contains("affinity")) << pod["spec"].dump();
  EXPECT_EQ(pod["spec"]["containers"], testing::rank_pod(j, 0, 0)["spec"]["containers"])
      << "the same container as every rank";
}

TEST(ObjectBuilder, ServiceIsHeadlessAndPublishesNotReady) {
  json svc = build_service(parse_job(testing::make_job("demo", 2)));
  EXPECT_EQ(svc["metadata"]["name"], "demo");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"]["ppu.dev/job"], "demo");
}

TEST(ObjectBuilder, ConfigMapHoldsTrainingYamlWithRanksAndIntegerTypes) {
  json job = testing::make_job("demo", 4);
  job["spec"]["training"]["inner"] = {{"lr", 0.0003}, {"batch_size", 16}};
  json cm = build_config_map(parse_job(job));
  EXPECT_EQ(cm["metadata"]["name"], "demo-config");
  YAML::Node y = YAML::Load(cm["data"]["config.yaml"].get<std::string>());
  EXPECT_EQ(y["ranks"].as<std::string>(), "4");
  EXPECT_EQ(y["slicing"]["slices"].as<std::string>(), "2");
  EXPECT_EQ(y["inner"]["batch_size"].as<std::string>(), "16");
  EXPECT_DOUBLE_EQ(y["inner"]["lr"].as<double>(), 0.0003);
  EXPECT_EQ(y["model"]["preset"].as<std::string>(), "tiny");
}

// The ports a spec leaves out: the operator's defaults are the CRD's schema defaults (which the
// API server fills in), and the rendezvous port is the runtime's (core/job_contract.h).
TEST(ObjectBuilder, PortDefaultsAreTheCrdsAndTheContracts) {
  const YAML::Node crd = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/manifests/crd/ppu.dev_ppujobs.yaml");
  const YAML::Node spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  json job = testing::make_job("demo", 2);
  job["spec"].erase("masterPort");
  job["spec"].erase("metricsPort");
  const JobSpec j = parse_job(job);
  EXPECT_EQ(j.master_port, spec["masterPort"]["default"].as<int>());
  EXPECT_EQ(j.metrics_port, spec["metricsPort"]["default"].as<int>());
  EXPECT_EQ(j.master_port, contract::kRendezvousPort);
  EXPECT_EQ(env_of(testing::rank_pod(j, 1, 0), "MASTER_PORT"), std::to_string(contract::kRendezvousPort));
}

// A notice (the pod deleted, drained, evicted or preempted) gives the rank checkpoint.notice_s to
// reach its round boundary and save; the kubelet must not SIGKILL it before that, plus the write.
TEST(ObjectBuilder, GracePeriodFollowsTheNoticeBound) {
  json job = testing::make_job("demo", 4);
  EXPECT_EQ(testing::rank_pod(parse_job(job), 0, 0)["spec"]["terminationGracePeriodSeconds"], 30)
      << "the default checkpoint.notice_s (25) + 5";
  job["spec"]["training"]["checkpoint"] = {{"notice_s", 100.5}};
  const JobSpec j = parse_job(job);
  EXPECT_EQ(termination_grace_seconds(j), 106);
  EXPECT_EQ(testing::rank_pod(j, 2, 0)["spec"]["terminationGracePeriodSeconds"], 106);
}

// Checkpoints in S3 (docs/OBJECT_STORAGE.md): the training section's location is not overridden
// by the volume's, and spec.checkpointSecret's keys are the container's environment.
TEST(ObjectBuilder, S3CheckpointsKeepTheirLocationAndTakeTheSecretsKeys) {
  json job = testing::make_job("demo", 4);
  EXPECT_EQ(env_of(testing::rank_pod(parse_job(job), 0, 0), "PPU_CHECKPOINT_DIR"), "/checkpoints");
  EXPECT_FALSE(testing::rank_pod(parse_job(job), 0, 0)["spec"]["containers"][0].contains("envFrom"));
  job["spec"]["training"]["checkpoint"] = {{"dir", "s3://ckpt/runs/demo"}};
  job["spec"]["checkpointSecret"] = "demo-s3";
  const JobSpec j = parse_job(job);
  EXPECT_TRUE(checkpoints_in_object_storage(j));
  EXPECT_EQ(checkpoint_location(j), "s3://ckpt/runs/demo");
  const json pod = testing::rank_pod(j, 1, 0);
  EXPECT_EQ(env_of(pod, "PPU_CHECKPOINT_DIR"), "<unset>") << "it would override checkpoint.dir";
  EXPECT_EQ(pod["spec"]["containers"][0]["envFrom"], json::parse(R"([{"secretRef": {"name": "demo-s3"}}])"));
}

// A frozen rank process stops answering its metrics port: the kubelet ends it, and the operator
// replaces the failed pod.
TEST(ObjectBuilder, RankPodsAreProbedOnTheirMetricsPort) {
  const json c = testing::rank_pod(parse_job(testing::make_job("demo", 4)), 1, 0)["spec"]["containers"][0];
  for (const char* probe : {"livenessProbe", "startupProbe"}) {
    SCOPED_TRACE(probe);
    EXPECT_EQ(c[probe]["httpGet"]["port"], "metrics");
    EXPECT_EQ(c[probe]["httpGet"]["path"], "/metrics");
    EXPECT_GT(c[probe]["timeoutSeconds"], 0);
  }
  EXPECT_EQ(c["livenessProbe"]["periodSeconds"].get<int>() * c["livenessProbe"]["failureThreshold"].get<int>(), 30);
  EXPECT_GE(c["startupProbe"]["periodSeconds"].get<int>() * c["startupProbe"]["failureThreshold"].get<int>(), 600)
      << "a rank may take minutes to load its data and meet its peers";
}

}  // namespace
}  // namespace ppu::op
