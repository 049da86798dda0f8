// Integration tests: the operator against a real kube-apiserver + etcd (no kubelet: the tests
// play the kubelet by writing pod phases through the status subresource). Each test process
// starts its own control plane, so tests are independent.
#include <CivetServer.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "controller/controller.h"
#include "controller/metrics_scraper.h"
#include "core/export_result.h"
#include "core/job_contract.h"
#include "core/run_result.h"
#include "kube/kube_client.h"
#include "kube/leader_election.h"
#include "kube/rfc3339.h"
#include "kube_test_env.h"
#include "metrics/operator_metrics.h"

namespace ppu::op {
namespace {

using testing::eventually;
using testing::KubeTestEnv;

class OperatorIT : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KubeTestEnv>();
    client_ = std::make_unique<KubeClient>(load_kubeconfig(env_->kubeconfig()));
  }
  void TearDown() override {
    if (scraper_) scraper_->stop();
    if (controller_) controller_->stop();
    controller_.reset();
    client_.reset();
    env_.reset();
  }

  void start_controller(double backoff_s = 1) {
    ControllerOptions o;
    o.ns = "default";
    o.workers = 2;
    o.reconcile.restart_backoff_s = backoff_s;
    o.reconcile.restart_backoff_max_s = 4;
    controller_ = std::make_unique<Controller>(*client_, o, &metrics_);
    controller_->start_informers();
    controller_->start_workers();
  }

  json job_manifest(const std::string& name, int replicas, int slices = 2) {
    return json{{"apiVersion", "ppu.dev/v1alpha1"},
                {"kind", "PPUJob"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec",
                 {{"replicas", replicas},
                  {"image", "ppu:test"},
                  {"training", {{"model", {{"preset", "tiny"}}}, {"slicing", {{"mode", "mlp"}, {"slices", slices}}}}},
                  {"runPolicy", {{"backoffLimit", 3}}}}}};
  }

  json create_job(const json& manifest) {
    Response r = client_->create(ResourceKind::PPUJob, "default", manifest);
    EXPECT_TRUE(r.ok()) << r.describe();
    return r.body;
  }

  json job(const std::string& name) { return client_->get(ResourceKind::PPUJob, "default", name).body; }
  std::string phase(const std::string& name) {
    json j = job(name);
    return j.contains("status") ? j["status"].value("phase", std::string()) : std::string();
  }
  int restarts(const std::string& name) {
    json j = job(name);
    return j.contains("status") ? j["status"].value("restartCount", -1) : -1;
  }

  std::vector<json> pods(const std::string& job_name) {
    ListOptions o;
    o.label_selector = std::string(kJobLabel) + "=" + job_name;
    Response r = client_->list(ResourceKind::Pod, "default", o);
    std::vector<json> out;
    for (auto& p : r.body["items"])
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p);
    return out;
  }
  std::vector<json> all_pods() {
    return client_->list(ResourceKind::Pod, "default").body["items"].get<std::vector<json>>();
  }

  bool wait_pods(const std::string& job_name, size_t n) {
    return eventually([&] { return pods(job_name).size() == n; });
  }

  // Plays the kubelet: writes a pod's phase (and optionally an exit code) via pods/status.
  void set_pod_status(const std::string& pod, const std::string& phase, int exit_code = -1,
                      const std::string& message = "", const std::string& ip = "",
                      const std::string& container = "ppu-train") {
    json status = {{"phase", phase}};
    if (phase == "Running")
      status["conditions"] =
          json::array({{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", format_rfc3339(now_seconds())}}});
    if (!ip.empty()) status["podIP"] = ip;
    if (exit_code >= 0)
      status["containerStatuses"] = json::array(
          {{{"name", container},
            {"ready", false},
            {"restartCount", 0},
            {"image", "ppu:test"},
            {"imageID", ""},
            {"state", {{"terminated", {{"exitCode", exit_code}, {"message", message}, {"reason", "Error"}}}}}}});
    Response r = client_->merge_patch(ResourceKind::Pod, "default", pod, {{"status", status}}, "status");
    ASSERT_TRUE(r.ok()) << pod << ": " << r.describe();
  }
  void set_all(const std::string& job_name, const std::string& phase, int exit_code = -1) {
    for (const auto& p : pods(job_name)) set_pod_status(p["metadata"]["name"], phase, exit_code);
  }

  std::set<std::string> pod_uids(const std::string& job_name) {
    std::set<std::string> s;
    for (const auto& p : pods(job_name)) s.insert(p["metadata"]["uid"].get<std::string>());
    return s;
  }

  // Every rank of `job_name` Succeeded with ppu-train's result for `round` (its termination message).
  void succeed_all(const std::string& job_name, int64_t round) {
    RunResult r;
    r.round = round;
    r.eval_loss = 2.1695;
    r.perplexity = 8.7542;
    r.steps = round * 10;
    r.tokens = 4096;
    r.checkpoint_round = round;
    r.seconds = 12.5;
    r.checksum = "7905be7a33aa0be4";
    for (const auto& p : pods(job_name)) set_pod_status(p["metadata"]["name"], "Succeeded", 0, format_run_result(r));
  }

  // Plays the Job controller for an export Job: creates its pod from the Job's template (so the
  // API server validates that template as a pod), ends it with `exit_code` and termination message
  // `message`, then writes the Job's terminal status, as kube-controller-manager would.
  void finish_export(const std::string& job_name, int exit_code, const std::string& message) {
    Response x = client_->get(ResourceKind::Job, "default", job_name);
    ASSERT_TRUE(x.ok()) << x.describe();
    const json& tmpl = x.body["spec"]["template"];
    const std::string pod_name = job_name + "-" + std::to_string(++export_pods_);
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", pod_name},
                  {"namespace", "default"},
                  {"labels", tmpl["metadata"]["labels"]},
                  {"ownerReferences", json::array({{{"apiVersion", "batch/v1"},
                                                    {"kind", "Job"},
                                                    {"name", job_name},
                                                    {"uid", x.body["metadata"]["uid"]},
                                                    {"controller", true},
                                                    {"blockOwnerDeletion", true}}})}}},
                {"spec", tmpl["spec"]}};
    Response created = client_->create(ResourceKind::Pod, "default", pod);
    ASSERT_TRUE(created.ok()) << "the export Job's pod template is not a valid pod: " << created.describe();
    set_pod_status(pod_name, "Running");
    set_pod_status(pod_name, exit_code == 0 ? "Succeeded" : "Failed", exit_code, message, "", "ppu-export");
    const std::string now = format_rfc3339(now_seconds());
    json status = {{"startTime", now}};
    auto cond = [&](const char* type, const std::string& why, const std::string& msg) {
      return json{{"type", type},  {"status", "True"}, {"lastProbeTime", now},
                  {"reason", why}, {"message", msg},   {"lastTransitionTime", now}};
    };
    if (exit_code == 0) {
      status["succeeded"] = 1;
      status["completionTime"] = now;
      status["conditions"] =
          json::array({cond("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
                       cond("Complete", "CompletionsReached", "Reached expected number of succeeded pods")});
    } else {
      const std::string why = "Container ppu-export for pod default/" + pod_name + " failed with exit code " +
                              std::to_string(exit_code) + " matching FailJob rule at index 0";
      status["failed"] = 1;
      status["conditions"] =
          json::array({cond("FailureTarget", "PodFailurePolicy", why), cond("Failed", "PodFailurePolicy", why)});
    }
    Response r = client_->merge_patch(ResourceKind::Job, "default", job_name, {{"status", status}}, "status");
    ASSERT_TRUE(r.ok()) << r.describe();
  }

  json exported_condition(const std::string& name) {
    json st = job(name).value("status", json::object());
    for (const auto& c : st.value("conditions", json::array()))
      if (c.value("type", "") == "Exported") return c;
    return {};
  }

  // The message of the (last listed) event with `reason`, "" if none.
  std::string event_message(const std::string& reason) {
    std::string msg;
    const json items = client_->list(ResourceKind::Event, "default").body.value("items", json::array());
    for (const auto& e : items)
      if (e.value("reason", "") == reason) msg = e.value("message", std::string());
    return msg;
  }

  bool has_event(const std::string& reason) {
    Response r = client_->list(ResourceKind::Event, "default");
    for (const auto& e : r.body["items"])
      if (e.value("reason", "") == reason) return true;
    return false;
  }

  std::unique_ptr<KubeTestEnv> env_;
  std::unique_ptr<KubeClient> client_;
  OperatorMetrics metrics_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<MetricsScraper> scraper_;
  int export_pods_ = 0;
};

std::string env_value(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e.value("value", std::string());
  return "<unset>";
}

TEST_F(OperatorIT, CreateMakesServiceConfigMapAndRankPodsWithRendezvousEnv) {
  start_controller();
  json created = create_job(job_manifest("demo", 4));
  ASSERT_TRUE(wait_pods("demo", 4));
  const std::string uid = created["metadata"]["uid"];
  std::set<std::string> ranks;
  for (const auto& p : pods("demo")) {
    const std::string name = p["metadata"]["name"];
    const std::string rank = env_value(p, "RANK");
    EXPECT_EQ(name, "demo-rank-" + rank);
    ranks.insert(rank);
    EXPECT_EQ(env_value(p, "WORLD_SIZE"), "4");
    EXPECT_EQ(env_value(p, "MASTER_ADDR"), "demo-rank-0.demo.default.svc");
    EXPECT_EQ(env_value(p, "MASTER_PORT"), std::to_string(contract::kRendezvousPort));
    EXPECT_EQ(env_value(p, "PPU_CONFIG"), "/etc/ppu/config.yaml");
    EXPECT_EQ(env_value(p, "PPU_CHECKPOINT_DIR"), "/checkpoints");
    EXPECT_EQ(env_value(p, "PPU_RUN_ID"), "default-demo-" + uid.substr(0, 8));
    EXPECT_EQ(p["spec"]["subdomain"], "demo");
    EXPECT_EQ(p["spec"]["hostname"], name);
    EXPECT_EQ(p["spec"]["restartPolicy"], "Never");
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], uid);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2", "3"}));

  Response svc = client_->get(ResourceKind::Service, "default", "demo");
  ASSERT_TRUE(svc.ok()) << svc.describe();
  EXPECT_EQ(svc.body["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc.body["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc.body["metadata"]["ownerReferences"][0]["uid"], uid);
  Response cm = client_->get(ResourceKind::ConfigMap, "default", "demo-config");
  ASSERT_TRUE(cm.ok()) << cm.describe();
  const std::string cfg = cm.body["data"]["config.yaml"];
  EXPECT_NE(cfg.find("preset: tiny"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("ranks: 4"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("sync_every: 100"), std::string::npos) << "CRD defaults rendered: " << cfg;

  EXPECT_TRUE(eventually([&] { return phase("demo") == "Pending"; }));
  set_all("demo", "Running");
  ASSERT_TRUE(eventually([&] { return phase("demo") == "Running"; })) << job("demo").dump();
  EXPECT_TRUE(eventually([&] { return job("demo")["status"].value("readyRanks", 0) == 4; }));
  std::string out;
  ASSERT_EQ(env_->kubectl("get ppj demo", out), 0) << out;
  EXPECT_NE(out.find("Running"), std::string::npos) << out;
  EXPECT_NE(out.find("4/4"), std::string::npos) << out;
  EXPECT_TRUE(eventually([&] { return has_event("GangCreated") && has_event("Running"); }));
}

TEST_F(OperatorIT, CelRejectsBadJobsWithMessagesNamingTheField) {
  auto apply = [&](const std::string& yaml, std::string& out) { return env_->kubectl("apply -f -", out, yaml); };
  auto manifest = [](const std::string& name, const std::string& replicas, const std::string& model,
                     const std::string& slicing) {
    return "apiVersion: ppu.dev/v1alpha1\nkind: PPUJob\nmetadata: {name: " + name +
           "}\nspec:\n  replicas: " + replicas + "\n  image: ppu:test\n  training: {model: " + model +
           ", slicing: " + slicing + "}\n";
  };
  std::string out;
  EXPECT_NE(apply(manifest("r", "6", "{preset: tiny}", "{mode: mlp, slices: 4}"), out), 0);
  EXPECT_NE(out.find("spec.replicas"), std::string::npos) << out;
  EXPECT_NE(out.find("multiple of spec.training.slicing.slices"), std::string::npos) << out;

  EXPECT_NE(apply(manifest("s", "5", "{preset: tiny}", "{mode: mlp, slices: 5}"), out), 0);
  EXPECT_NE(out.find("spec.training.slicing.slices"), std::string::npos) << out;
  EXPECT_NE(out.find("MLP hidden size"), std::string::npos) << out;

  // Explicit d_model overrides the preset: 4*48 = 192 is divisible by 3, 4*64 is not.
  EXPECT_NE(apply(manifest("d1", "3", "{preset: tiny}", "{mode: mlp, slices: 3}"), out), 0);
  EXPECT_EQ(apply(manifest("d2", "3", "{preset: tiny, d_model: 48}", "{mode: mlp, slices: 3}"), out), 0) << out;

  // mlp+heads: gpt2-124m has 12 heads (8 does not divide); explicit heads: 16 does.
  EXPECT_NE(apply(manifest("h1", "8", "{preset: gpt2-124m}", "{mode: mlp+heads, slices: 8}"), out), 0);
  EXPECT_NE(out.find("spec.training.model.heads"), std::string::npos) << out;
  EXPECT_EQ(apply(manifest("h2", "8", "{preset: gpt2-124m, heads: 16}", "{mode: mlp+heads, slices: 8}"), out), 0)
      << out;
  EXPECT_EQ(apply(manifest("h3", "8", "{preset: gpt2-124m}", "{mode: mlp, slices: 8}"), out), 0) << out;

  // The ablations: mlp+heads+wo needs N | heads like mlp+heads; horizontal needs N | layers
  // (tiny: 2 layers, 4 heads).
  EXPECT_NE(apply(manifest("w1", "8", "{preset: gpt2-124m}", "{mode: mlp+heads+wo, slices: 8}"), out), 0);
  EXPECT_NE(out.find("spec.training.model.heads"), std::string::npos) << out;
  EXPECT_NE(apply(manifest("z1", "4", "{preset: tiny}", "{mode: horizontal, slices: 4}"), out), 0);
  EXPECT_NE(out.find("spec.training.model.layers in modes horizontal"), std::string::npos) << out;
  EXPECT_EQ(apply(manifest("z2", "4", "{preset: tiny, layers: 4}", "{mode: horizontal, slices: 4}"), out), 0) << out;
  // heads (the heads-only ablation) needs N | heads, as the ranks' check_slicing does: 8 divides
  // gpt2-124m's MLP (3072) but not its 12 heads.
  EXPECT_NE(apply(manifest("o1", "8", "{preset: gpt2-124m}", "{mode: heads, slices: 8}"), out), 0);
  EXPECT_NE(out.find("spec.training.model.heads in modes mlp+heads, mlp+heads+wo, heads"), std::string::npos) << out;
  EXPECT_EQ(apply(manifest("o2", "4", "{preset: gpt2-124m}", "{mode: heads, slices: 4}"), out), 0) << out;
  EXPECT_NE(apply(manifest("j1", "4", "{preset: tiny}", "{mode: mlp, slices: 4, jacobian: some}"), out), 0);
  EXPECT_NE(out.find("spec.training.slicing.jacobian"), std::string::npos) << out;

  EXPECT_NE(apply(manifest("m", "4", "{preset: tiny}", "{mode: everything, slices: 4}"), out), 0);
  EXPECT_NE(out.find("spec.training.slicing.mode"), std::string::npos) << out;

  // Live recovery pacing: the back-off's cap is not below its base; no negative window.
  const std::string paced = manifest("rp", "4", "{preset: tiny}", "{mode: mlp, slices: 4}");
  EXPECT_NE(apply(paced + "  runPolicy: {recoveryBackoffSeconds: 60, recoveryBackoffMaxSeconds: 30}\n", out), 0);
  EXPECT_NE(out.find("spec.runPolicy.recoveryBackoffMaxSeconds must be at least"), std::string::npos) << out;
  EXPECT_NE(apply(paced + "  runPolicy: {recoveryWindowSeconds: -1}\n", out), 0);
  EXPECT_NE(out.find("recoveryWindowSeconds"), std::string::npos) << out;
  ASSERT_EQ(apply(paced + "  runPolicy: {recoveryWindowSeconds: 0, recoveryBackoffSeconds: 0}\n", out), 0) << out;
  const json rp = job("rp")["spec"]["runPolicy"];
  EXPECT_EQ(rp["recoveryBackoffMaxSeconds"], 300) << "defaulted: " << rp.dump();
  EXPECT_EQ(rp["maxRecoveries"], 10);

  // Immutability while not suspended, allowed while suspended.
  ASSERT_EQ(apply(manifest("imm", "4", "{preset: tiny}", "{mode: mlp, slices: 4}"), out), 0) << out;
  EXPECT_NE(env_->kubectl("patch ppj imm --type=merge -p '{\"spec\":{\"replicas\":8}}'", out), 0);
  EXPECT_NE(out.find("spec.replicas is immutable"), std::string::npos) << out;
  EXPECT_NE(env_->kubectl("patch ppj imm --type=merge -p '{\"spec\":{\"image\":\"other\"}}'", out), 0);
  EXPECT_NE(out.find("spec.image is immutable"), std::string::npos) << out;
  EXPECT_NE(env_->kubectl("patch ppj imm --type=merge -p '{\"spec\":{\"training\":{\"train\":{\"steps\":5}}}}'", out),
            0);
  EXPECT_NE(out.find("spec.training is immutable"), std::string::npos) << out;
  ASSERT_EQ(env_->kubectl("patch ppj imm --type=merge -p '{\"spec\":{\"runPolicy\":{\"suspend\":true}}}'", out), 0)
      << out;
  EXPECT_EQ(env_->kubectl("patch ppj imm --type=merge -p '{\"spec\":{\"replicas\":8}}'", out), 0) << out;
}

TEST_F(OperatorIT, FailedRankRestartsTheWholeGang) {
  start_controller(1);
  create_job(job_manifest("g", 4));
  ASSERT_TRUE(wait_pods("g", 4));
  set_all("g", "Running");
  ASSERT_TRUE(eventually([&] { return phase("g") == "Running"; }));
  auto before = pod_uids("g");
  set_pod_status("g-rank-2", "Failed", 1, "segfault");
  ASSERT_TRUE(eventually([&] { return restarts("g") == 1; })) << job("g").dump();
  // A whole new gang: four pods, none of the old ones.
  ASSERT_TRUE(eventually([&] {
    auto now = pod_uids("g");
    if (now.size() != 4) return false;
    for (const auto& u : now)
      if (before.count(u)) return false;
    return true;
  })) << "gang not recreated";
  EXPECT_TRUE(eventually([&] { return phase("g") == "Pending"; }));
  EXPECT_TRUE(has_event("GangRestart"));
  for (const auto& p : pods("g")) EXPECT_EQ(p["metadata"]["annotations"]["ppu.dev/restart"], "1");
}

TEST_F(OperatorIT, PodDeletedByHandRestartsTheGang) {
  start_controller(1);
  create_job(job_manifest("h", 2));
  ASSERT_TRUE(wait_pods("h", 2));
  set_all("h", "Running");
  ASSERT_TRUE(eventually([&] { return phase("h") == "Running"; }));
  ASSERT_TRUE(client_->remove(ResourceKind::Pod, "default", "h-rank-1").ok());
  EXPECT_TRUE(eventually([&] { return restarts("h") == 1; })) << job("h").dump();
  EXPECT_TRUE(wait_pods("h", 2));
}

// ---- live recovery (training.network.recovery live) ----

json live_manifest(json m) {
  m["spec"]["training"]["network"] = {{"recovery", "live"}};
  return m;
}

TEST_F(OperatorIT, LiveJobHasARendezvousPodAndServiceAndRanksUseThemAsAnExternalStore) {
  start_controller();
  json created = create_job(live_manifest(job_manifest("lv", 2)));
  const std::string uid = created["metadata"]["uid"];
  ASSERT_TRUE(wait_pods("lv", 3)) << "two ranks and the store";
  Response store = client_->get(ResourceKind::Pod, "default", "lv-rendezvous");
  ASSERT_TRUE(store.ok()) << store.describe();
  const json& c = store.body["spec"]["containers"][0];
  EXPECT_EQ(c["command"],
            json::array({contract::kRendezvousBinary, "--port", std::to_string(contract::kRendezvousPort)}));
  EXPECT_EQ(c["image"], "ppu:test");
  EXPECT_EQ(store.body["metadata"]["labels"]["ppu.dev/role"], "rendezvous");
  EXPECT_EQ(store.body["metadata"]["ownerReferences"][0]["uid"], uid);
  Response svc = client_->get(ResourceKind::Service, "default", "lv-rendezvous");
  ASSERT_TRUE(svc.ok()) << svc.describe();
  EXPECT_EQ(svc.body["spec"]["clusterIP"], "None") << "headless: the name is the store pod's own address";
  EXPECT_EQ(svc.body["spec"]["selector"], store.body["metadata"]["labels"]);
  EXPECT_EQ(svc.body["spec"]["ports"][0]["port"], contract::kRendezvousPort);
  EXPECT_EQ(svc.body["metadata"]["ownerReferences"][0]["uid"], uid);
  for (const char* rank : {"lv-rank-0", "lv-rank-1"}) {
    Response p = client_->get(ResourceKind::Pod, "default", rank);
    ASSERT_TRUE(p.ok()) << p.describe();
    EXPECT_EQ(env_value(p.body, "MASTER_ADDR"), "lv-rendezvous.default.svc") << rank;
    EXPECT_EQ(env_value(p.body, "MASTER_PORT"), std::to_string(contract::kRendezvousPort)) << rank;
    EXPECT_EQ(env_value(p.body, "PPU_EXTERNAL_STORE"), "1") << rank;
  }
  set_all("lv", "Running");
  ASSERT_TRUE(eventually([&] { return phase("lv") == "Running"; })) << job("lv").dump();
  EXPECT_TRUE(eventually([&] { return job("lv")["status"].value("recoveries", -1) == 0; })) << job("lv").dump();
  EXPECT_EQ(pods("lv").size(), 3u) << "the store is not taken for a stray pod";
  std::string out;
  ASSERT_EQ(env_->kubectl("get ppj lv", out), 0) << out;
  EXPECT_NE(out.find("RECOVERIES"), std::string::npos) << out;
}

// spec.elastic (docs/RESIZE.md) through the real API server: `kubectl scale` (the scale
// subresource) within the range, the CRD's refusals outside it and on a job that is not elastic,
// the pods' WORLD_SIZE, the store's desired size in the ConfigMap, a grow creating the new slots
// without a recovery, a shrink leaving a running rank to retire and removing it once it has.
TEST_F(OperatorIT, ScalingAnElasticJobResizesItWithinItsRange) {
  start_controller();
  json manifest = live_manifest(job_manifest("el", 2));
  manifest["spec"]["elastic"] = {{"minReplicas", 2}, {"maxReplicas", 4}};
  create_job(manifest);
  ASSERT_TRUE(wait_pods("el", 3)) << "two ranks and the store";
  Response r0 = client_->get(ResourceKind::Pod, "default", "el-rank-0");
  EXPECT_EQ(env_value(r0.body, "WORLD_SIZE"), "4") << "the job's slots";
  Response store = client_->get(ResourceKind::Pod, "default", "el-rendezvous");
  EXPECT_NE(store.body["spec"]["containers"][0]["command"].dump().find("--desired-file"), std::string::npos)
      << store.body["spec"]["containers"][0].dump();
  auto desired_in_config = [&] {
    return client_->get(ResourceKind::ConfigMap, "default", "el-config").body["data"].value("desired-ranks", "");
  };
  EXPECT_EQ(desired_in_config(), "2");
  set_all("el", "Running");
  ASSERT_TRUE(eventually([&] { return phase("el") == "Running"; })) << job("el").dump();

  std::string out;
  ASSERT_EQ(env_->kubectl("scale ppj el --replicas=4", out), 0) << out;
  ASSERT_TRUE(wait_pods("el", 5)) << "slots 2 and 3 created";
  ASSERT_TRUE(eventually([&] { return desired_in_config() == "4"; })) << desired_in_config();
  // The store's pod is annotated with the size (its kubelet then refreshes the volume at once).
  auto desired_on_store = [&] {
    return client_->get(ResourceKind::Pod, "default", "el-rendezvous")
        .body["metadata"]["annotations"]
        .value("ppu.dev/desired-ranks", "");
  };
  ASSERT_TRUE(eventually([&] { return desired_on_store() == "4"; })) << desired_on_store();
  ASSERT_TRUE(eventually([&] { return job("el")["status"].value("desiredReplicas", 0) == 4; })) << job("el").dump();
  const json st = job("el")["status"];
  EXPECT_EQ(st["lastResize"]["from"], 2) << st.dump();
  EXPECT_EQ(st["lastResize"]["to"], 4) << st.dump();
  EXPECT_EQ(st.value("recoveries", 0), 0) << "new slots are no losses: " << st.dump();
  EXPECT_NE(event_message("Resized").find("resized from 2 to 4 of 4 ranks"), std::string::npos)
      << event_message("Resized");
  ASSERT_EQ(env_->kubectl("get ppj el -o jsonpath={.status.activeRanks}", out), 0) << out;

  // Outside the range: refused by the CRD's rules, naming the range.
  EXPECT_NE(env_->kubectl("scale ppj el --replicas=5", out), 0);
  EXPECT_NE(out.find("within [spec.elastic.minReplicas, spec.elastic.maxReplicas]"), std::string::npos) << out;
  EXPECT_NE(env_->kubectl("scale ppj el --replicas=1", out), 0);

  // Shrink to 2: ranks 2 and 3 still run and retire at the job's next round boundary (deleting
  // them would be a notice); once rank 3 has (exit 0), its pod is deleted; rank 2 stays meanwhile.
  set_all("el", "Running");
  ASSERT_EQ(env_->kubectl("scale ppj el --replicas=2", out), 0) << out;
  ASSERT_TRUE(eventually([&] { return desired_in_config() == "2"; })) << desired_in_config();
  ASSERT_TRUE(eventually([&] { return desired_on_store() == "2"; })) << desired_on_store();
  ASSERT_TRUE(eventually([&] { return job("el")["status"].value("resizes", json::array()).size() == 2u; }))
      << "the size history: " << job("el")["status"].dump();
  EXPECT_EQ(job("el")["status"]["resizes"][1]["to"], 2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(pods("el").size(), 5u) << "a running rank above the size was deleted instead of retiring";
  set_pod_status("el-rank-3", "Succeeded", 0, "retired: the job shrank to 2 ranks");
  ASSERT_TRUE(eventually([&] { return pods("el").size() == 4u; })) << "the retired rank's pod stays";
  EXPECT_TRUE(client_->get(ResourceKind::Pod, "default", "el-rank-2").ok());
  EXPECT_EQ(phase("el"), "Running");

  // A job that is not elastic cannot be scaled while it runs; elastic needs live recovery and
  // a range of multiples of the slices.
  create_job(live_manifest(job_manifest("fx", 2)));
  EXPECT_NE(env_->kubectl("scale ppj fx --replicas=4", out), 0);
  EXPECT_NE(out.find("spec.replicas is immutable unless the job is suspended or elastic"), std::string::npos) << out;
  json gang = job_manifest("eg", 2);
  gang["spec"]["elastic"] = {{"minReplicas", 2}, {"maxReplicas", 4}};
  EXPECT_FALSE(client_->create(ResourceKind::PPUJob, "default", gang).ok());
  json odd = live_manifest(job_manifest("eo", 2));
  odd["spec"]["elastic"] = {{"minReplicas", 2}, {"maxReplicas", 5}};
  Response refused = client_->create(ResourceKind::PPUJob, "default", odd);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.describe().find("multiples of spec.training.slicing.slices"), std::string::npos)
      << refused.describe();
}

TEST_F(OperatorIT, DeletingOneRankOfALiveJobRecreatesOnlyThatPod) {
  start_controller(1);
  json manifest = live_manifest(job_manifest("lr", 4));
  manifest["spec"]["runPolicy"]["recoveryBackoffSeconds"] = 2;
  create_job(manifest);
  ASSERT_TRUE(wait_pods("lr", 5));
  set_all("lr", "Running");
  ASSERT_TRUE(eventually([&] { return phase("lr") == "Running"; }));
  auto uid_of = [&](const std::string& pod) {
    return client_->get(ResourceKind::Pod, "default", pod).body["metadata"].value("uid", std::string());
  };
  std::map<std::string, std::string> before;
  for (const char* p : {"lr-rank-0", "lr-rank-1", "lr-rank-3", "lr-rendezvous"}) before[p] = uid_of(p);
  const std::string lost = uid_of("lr-rank-2");
  ASSERT_TRUE(client_->remove(ResourceKind::Pod, "default", "lr-rank-2").ok());
  ASSERT_TRUE(eventually([&] {
    const std::string now = uid_of("lr-rank-2");
    return !now.empty() && now != lost;
  })) << "rank 2 not recreated";
  ASSERT_TRUE(eventually([&] { return job("lr")["status"].value("recoveries", 0) == 1; })) << job("lr").dump();
  Response r2 = client_->get(ResourceKind::Pod, "default", "lr-rank-2");
  EXPECT_EQ(env_value(r2.body, "RANK"), "2");
  for (const auto& [p, uid] : before) EXPECT_EQ(uid_of(p), uid) << p << " was touched";
  EXPECT_EQ(restarts("lr"), 0);
  EXPECT_EQ(phase("lr"), "Running");
  EXPECT_TRUE(has_event("RankRecovery"));
  EXPECT_FALSE(has_event("GangRestart"));

  // The replacement runs, then dies of a signal: recreated alone again, a second recovery, and
  // rank 2's second loss within the window: its replacement waits recoveryBackoffSeconds.
  set_pod_status("lr-rank-2", "Running");
  const std::string second = uid_of("lr-rank-2");
  set_pod_status("lr-rank-2", "Failed", 137);
  ASSERT_TRUE(eventually([&] {
    const std::string now = uid_of("lr-rank-2");
    return !now.empty() && now != second && job("lr")["status"].value("recoveries", 0) == 2;
  })) << job("lr").dump();
  for (const auto& [p, uid] : before) EXPECT_EQ(uid_of(p), uid) << p << " was touched";
  const std::string waited = event_message("RankRecoveryBackoff");
  const auto until = waited.find("(until ");
  ASSERT_NE(until, std::string::npos) << "no back-off event: " << waited;
  EXPECT_NE(waited.find("rank 2 was lost 2 times"), std::string::npos) << waited;
  const auto not_before = parse_rfc3339(waited.substr(until + 7, 20));
  const auto created = parse_rfc3339(
      client_->get(ResourceKind::Pod, "default", "lr-rank-2").body["metadata"].value("creationTimestamp", ""));
  ASSERT_TRUE(not_before && created) << waited;
  EXPECT_GE(*created, *not_before) << "the replacement was created before its back-off ended";
  // Settled: the count stays at 2 and the record of the replaced rank is gone.
  ASSERT_TRUE(eventually([&] { return !job("lr")["status"].contains("recoveringRanks"); })) << job("lr").dump();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(job("lr")["status"].value("recoveries", 0), 2);
  EXPECT_EQ(restarts("lr"), 0);
}

TEST_F(OperatorIT, DeletingOneRankOfAGangJobStillRestartsTheGang) {
  start_controller(1);
  create_job(job_manifest("gr", 4));
  ASSERT_TRUE(wait_pods("gr", 4));
  set_all("gr", "Running");
  ASSERT_TRUE(eventually([&] { return phase("gr") == "Running"; }));
  auto before = pod_uids("gr");
  ASSERT_TRUE(client_->remove(ResourceKind::Pod, "default", "gr-rank-2").ok());
  ASSERT_TRUE(eventually([&] { return restarts("gr") == 1; })) << job("gr").dump();
  ASSERT_TRUE(eventually([&] {
    auto now = pod_uids("gr");
    if (now.size() != 4) return false;
    for (const auto& u : now)
      if (before.count(u)) return false;
    return true;
  })) << "every rank replaced";
  EXPECT_FALSE(job("gr")["status"].contains("recoveries"));
  EXPECT_FALSE(client_->get(ResourceKind::Pod, "default", "gr-rendezvous").ok()) << "no store for a gang job";
}

TEST_F(OperatorIT, ARankExiting3UnderLiveRestartsTheGangAndTheStore) {
  start_controller(1);
  create_job(live_manifest(job_manifest("l3", 2)));
  ASSERT_TRUE(wait_pods("l3", 3));
  set_all("l3", "Running");
  ASSERT_TRUE(eventually([&] { return phase("l3") == "Running"; }));
  auto before = pod_uids("l3");
  set_pod_status("l3-rank-1", "Failed", 3, "too few ranks left for the live group");
  ASSERT_TRUE(eventually([&] { return restarts("l3") == 1; })) << job("l3").dump();
  ASSERT_TRUE(eventually([&] {
    auto now = pod_uids("l3");
    if (now.size() != 3) return false;
    for (const auto& u : now)
      if (before.count(u)) return false;
    return true;
  })) << "ranks and store all new";
  EXPECT_TRUE(client_->get(ResourceKind::Pod, "default", "l3-rendezvous").ok());
  EXPECT_EQ(job("l3")["status"].value("recoveries", -1), 0);
  EXPECT_TRUE(has_event("GangRestart"));
}

TEST_F(OperatorIT, ALiveJobsFailedStorePodIsRecreatedAloneWithoutAGangRestart) {
  start_controller(1);
  create_job(live_manifest(job_manifest("ls", 2)));
  ASSERT_TRUE(wait_pods("ls", 3));
  set_all("ls", "Running");
  ASSERT_TRUE(eventually([&] { return phase("ls") == "Running"; }));
  auto store_uid = [&] {
    Response r = client_->get(ResourceKind::Pod, "default", "ls-rendezvous");
    return r.ok() ? r.body["metadata"]["uid"].get<std::string>() : std::string();
  };
  const std::string old_store = store_uid();
  auto ranks_before = pod_uids("ls");
  ranks_before.erase(old_store);
  set_pod_status("ls-rendezvous", "Failed", 137, "killed", "", "ppu-rendezvous");
  ASSERT_TRUE(eventually([&] { return !store_uid().empty() && store_uid() != old_store; })) << job("ls").dump();
  auto ranks_after = pod_uids("ls");
  ranks_after.erase(store_uid());
  EXPECT_EQ(ranks_after, ranks_before) << "no rank pod replaced";
  EXPECT_EQ(restarts("ls"), 0);
  EXPECT_EQ(phase("ls"), "Running");
  EXPECT_TRUE(eventually([&] { return has_event("StoreReplaced"); }));
}

// ---- a lost node (no kubelet here: the test plays the node and the node lifecycle controller) ----

TEST_F(OperatorIT, ALiveRankStuckTerminatingOnALostNodeIsForceDeletedAndReplaced) {
  start_controller(1);
  create_job(live_manifest(job_manifest("ln", 4)));
  ASSERT_TRUE(wait_pods("ln", 5));
  auto set_node = [&](const std::string& name, const std::string& ready) {
    if (!client_->get(ResourceKind::Node, "", name).ok()) {
      Response r = client_->create(ResourceKind::Node, "",
                                   {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}});
      ASSERT_TRUE(r.ok()) << r.describe();
    }
    const std::string now = format_rfc3339(now_seconds());
    json cond = {{"type", "Ready"},          {"status", ready},
                 {"reason", "Test"},         {"message", "set by the test"},
                 {"lastHeartbeatTime", now}, {"lastTransitionTime", now}};
    Response r = client_->merge_patch(ResourceKind::Node, "", name, {{"status", {{"conditions", json::array({cond})}}}},
                                      "status");
    ASSERT_TRUE(r.ok()) << r.describe();
  };
  auto bind = [&](const std::string& pod, const std::string& node) {  // the scheduler's part
    std::string out;
    const json binding = {{"apiVersion", "v1"},
                          {"kind", "Binding"},
                          {"metadata", {{"name", pod}, {"namespace", "default"}}},
                          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    ASSERT_EQ(env_->kubectl("create -f -", out, binding.dump()), 0) << out;
  };
  auto uid_of = [&](const std::string& pod) {
    return client_->get(ResourceKind::Pod, "default", pod).body["metadata"].value("uid", std::string());
  };
  auto terminating = [&](const std::string& pod) {
    return client_->get(ResourceKind::Pod, "default", pod).body["metadata"].contains("deletionTimestamp");
  };
  set_node("lost-node", "True");
  set_node("live-node", "True");
  bind("ln-rank-1", "lost-node");
  bind("ln-rank-2", "live-node");
  set_all("ln", "Running");
  ASSERT_TRUE(eventually([&] { return phase("ln") == "Running"; })) << job("ln").dump();
  const std::string rank1 = uid_of("ln-rank-1"), rank2 = uid_of("ln-rank-2"), rank0 = uid_of("ln-rank-0");

  // lost-node stops answering and its pod is evicted; live-node's pod is deleted too (a drain).
  // Both are bound to a node, so both stay Terminating until a kubelet confirms: none will here.
  set_node("lost-node", "Unknown");
  ASSERT_TRUE(client_->remove(ResourceKind::Pod, "default", "ln-rank-1", "Background", "", 1).ok());
  ASSERT_TRUE(client_->remove(ResourceKind::Pod, "default", "ln-rank-2", "Background", "", 1).ok());
  ASSERT_TRUE(terminating("ln-rank-1") && terminating("ln-rank-2")) << "the apiserver removed a bound pod at once";

  // Rank 1: force-deleted once its 1 s grace period is over, and replaced under the same name.
  ASSERT_TRUE(eventually([&] {
    const std::string now = uid_of("ln-rank-1");
    return !now.empty() && now != rank1 && !terminating("ln-rank-1");
  })) << "rank 1 not replaced: "
      << job("ln").dump();
  EXPECT_EQ(env_value(client_->get(ResourceKind::Pod, "default", "ln-rank-1").body, "RANK"), "1");
  const std::string forced = event_message("PodForceDeleted");
  EXPECT_NE(forced.find("node lost-node, which is Unknown"), std::string::npos) << forced;
  ASSERT_TRUE(eventually([&] { return job("ln")["status"].value("recoveries", 0) == 1; })) << job("ln").dump();

  // Rank 2: its node is Ready, its kubelet would finish it: waited for, however long.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(uid_of("ln-rank-2"), rank2);
  EXPECT_TRUE(terminating("ln-rank-2"));

  // live-node turns NotReady: that change alone brings the pass that frees rank 2's name.
  set_node("live-node", "False");
  ASSERT_TRUE(eventually([&] {
    const std::string now = uid_of("ln-rank-2");
    return !now.empty() && now != rank2 && !terminating("ln-rank-2");
  })) << "rank 2 not replaced: "
      << job("ln").dump();
  ASSERT_TRUE(eventually([&] { return job("ln")["status"].value("recoveries", 0) == 2; })) << job("ln").dump();
  EXPECT_EQ(uid_of("ln-rank-0"), rank0) << "the other ranks keep running";
  EXPECT_EQ(restarts("ln"), 0);
  EXPECT_FALSE(has_event("GangRestart"));
  const std::string text = prometheus::TextSerializer().Serialize(metrics_.registry()->Collect());
  EXPECT_NE(text.find("ppu_operator_pod_force_deletions_total 2"), std::string::npos) << text;
}

TEST_F(OperatorIT, BackoffLimitExhaustedFailsTheJob) {
  start_controller(1);
  json m = job_manifest("b", 2);
  m["spec"]["runPolicy"]["backoffLimit"] = 1;
  create_job(m);
  ASSERT_TRUE(wait_pods("b", 2));
  set_pod_status("b-rank-0", "Failed", 3, "peer timeout");
  ASSERT_TRUE(eventually([&] { return restarts("b") == 1 && phase("b") == "Pending"; })) << job("b").dump();
  ASSERT_TRUE(wait_pods("b", 2));
  ASSERT_TRUE(eventually([&] {
    for (const auto& p : pods("b"))
      if (p["metadata"]["annotations"]["ppu.dev/restart"] != "1") return false;
    return true;
  }));
  set_pod_status("b-rank-1", "Failed", 1, "crash");
  ASSERT_TRUE(eventually([&] { return phase("b") == "Failed"; })) << job("b").dump();
  json st = job("b")["status"];
  EXPECT_EQ(st["restartCount"], 1);
  bool found = false;
  for (const auto& c : st["conditions"])
    if (c["type"] == "Failed") found = c["reason"] == "BackoffLimitExceeded";
  EXPECT_TRUE(found) << st.dump();
  EXPECT_TRUE(st.contains("completionTime"));
}

TEST_F(OperatorIT, ExitCode2FailsAtOnceWithTheReason) {
  start_controller(1);
  create_job(job_manifest("cfg", 2));
  ASSERT_TRUE(wait_pods("cfg", 2));
  set_all("cfg", "Running");
  set_pod_status("cfg-rank-1", "Failed", 2, "config key 'inner.lr' is 'fast'; expected a number");
  ASSERT_TRUE(eventually([&] { return phase("cfg") == "Failed"; })) << job("cfg").dump();
  json st = job("cfg")["status"];
  EXPECT_EQ(st["restartCount"], 0);
  std::string message;
  for (const auto& c : st["conditions"])
    if (c["type"] == "Failed") {
      EXPECT_EQ(c["reason"], "ConfigurationError");
      message = c["message"];
    }
  EXPECT_NE(message.find("inner.lr"), std::string::npos) << st.dump();
  // cleanPodPolicy Running (default): the still-running rank is deleted, the failed one kept.
  EXPECT_TRUE(eventually([&] { return pods("cfg").size() == 1; }));
}

TEST_F(OperatorIT, SuspendDeletesPodsAndResumeRecreatesThem) {
  start_controller(1);
  create_job(job_manifest("s", 2));
  ASSERT_TRUE(wait_pods("s", 2));
  ASSERT_TRUE(
      client_->merge_patch(ResourceKind::PPUJob, "default", "s", {{"spec", {{"runPolicy", {{"suspend", true}}}}}})
          .ok());
  ASSERT_TRUE(eventually([&] { return phase("s") == "Suspended"; })) << job("s").dump();
  EXPECT_TRUE(wait_pods("s", 0));
  ASSERT_TRUE(
      client_->merge_patch(ResourceKind::PPUJob, "default", "s", {{"spec", {{"runPolicy", {{"suspend", false}}}}}})
          .ok());
  EXPECT_TRUE(wait_pods("s", 2));
  EXPECT_TRUE(eventually([&] { return phase("s") == "Pending"; })) << job("s").dump();
  EXPECT_EQ(restarts("s"), 0);
  EXPECT_TRUE(has_event("Suspended") && has_event("Resumed"));
}

TEST_F(OperatorIT, AllRanksSucceededCompletesAndTtlDeletesTheJob) {
  start_controller(1);
  json m = job_manifest("ok", 2);
  m["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 2;
  create_job(m);
  ASSERT_TRUE(wait_pods("ok", 2));
  set_all("ok", "Running");
  set_all("ok", "Succeeded", 0);
  ASSERT_TRUE(eventually([&] { return phase("ok") == "Succeeded"; })) << job("ok").dump();
  EXPECT_TRUE(job("ok")["status"].contains("completionTime"));
  EXPECT_EQ(pods("ok").size(), 2u) << "cleanPodPolicy Running keeps finished pods";
  EXPECT_TRUE(eventually([&] { return client_->get(ResourceKind::PPUJob, "default", "ok").status == 404; }))
      << "ttlSecondsAfterFinished";
}

// The ranks' termination messages (ppu-train's result on success) set the final status through
// a real apiserver: the CRD's status schema keeps every field, kubectl's columns read them.
TEST_F(OperatorIT, SucceededJobStatusIsTheRanksResults) {
  start_controller(1);
  create_job(job_manifest("res", 2));
  ASSERT_TRUE(wait_pods("res", 2));
  set_all("res", "Running");
  RunResult r;
  r.round = 20;
  r.eval_loss = 2.1695;
  r.perplexity = 8.7542;
  r.steps = 200;
  r.tokens = 409600;
  r.checkpoint_round = 20;
  r.seconds = 61.2;
  r.checksum = "7905be7a33aa0be4";
  for (const auto& p : pods("res")) set_pod_status(p["metadata"]["name"], "Succeeded", 0, format_run_result(r));
  ASSERT_TRUE(eventually([&] { return phase("res") == "Succeeded"; })) << job("res").dump();
  const json st = job("res")["status"];
  EXPECT_EQ(st["outerRound"], 20) << st.dump();
  EXPECT_EQ(st["perplexity"], "8.754");
  EXPECT_EQ(st["lastCheckpointRound"], 20);
  EXPECT_EQ(st["result"]["evalLoss"], "2.169500");
  EXPECT_EQ(st["result"]["tokens"], 2 * 409600);
  EXPECT_EQ(st["result"]["parameterChecksum"], "7905be7a33aa0be4");
  bool reported = false;
  for (const auto& c : st["conditions"])
    if (c["type"] == "ResultReported") reported = c["status"] == "True";
  EXPECT_TRUE(reported) << st.dump();
}

// A Succeeded job with spec.export gets exactly one export Job (ppu-export on the
// checkpoint volume, owned by the job, from the same image), and that Job's end is the job's
// Exported condition and status.export; the job stays Succeeded either way.
TEST_F(OperatorIT, SucceededJobIsExportedByOneJobAndTheModelIsRecorded) {
  start_controller(1);
  json m = job_manifest("exp", 2);
  m["spec"]["checkpoint"] = {{"claimName", "exp-ckpt"}};
  m["spec"]["export"] = {{"dtype", "bf16"}};
  m["spec"]["resources"] = {{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}}};
  const std::string uid = create_job(m)["metadata"]["uid"];
  ASSERT_TRUE(wait_pods("exp", 2));
  set_all("exp", "Running");
  EXPECT_EQ(client_->get(ResourceKind::Job, "default", "exp-export").status, 404) << "no export before success";
  succeed_all("exp", 20);
  ASSERT_TRUE(eventually([&] { return phase("exp") == "Succeeded"; })) << job("exp").dump();
  ASSERT_TRUE(eventually([&] { return client_->get(ResourceKind::Job, "default", "exp-export").ok(); }));

  const json x = client_->get(ResourceKind::Job, "default", "exp-export").body;
  EXPECT_EQ(x["metadata"]["ownerReferences"][0]["kind"], "PPUJob");
  EXPECT_EQ(x["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ(x["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(x["spec"]["backoffLimit"], 2);
  const json& tmpl = x["spec"]["template"];
  EXPECT_EQ(tmpl["metadata"]["labels"]["ppu.dev/export"], "exp");
  EXPECT_FALSE(tmpl["metadata"]["labels"].contains("ppu.dev/job")) << "the export pod is not a rank";
  const json& c = tmpl["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "ppu:test");
  EXPECT_EQ(c["command"], json::array({"ppu-export"}));
  EXPECT_EQ(c["args"], json::array({"--checkpoint", "/checkpoints", "--out", "/checkpoints/model", "--format", "hf",
                                    "--dtype", "bf16"}));
  EXPECT_EQ(c["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(c["resources"]["limits"]["memory"], "1Gi");
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/checkpoints");
  EXPECT_EQ(tmpl["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], "exp-ckpt");
  EXPECT_EQ(tmpl["spec"]["securityContext"]["runAsNonRoot"], true);
  Response np = client_->get(ResourceKind::NetworkPolicy, "default", "exp.export");
  ASSERT_TRUE(np.ok()) << np.describe();
  EXPECT_EQ(np.body["spec"]["podSelector"]["matchLabels"], (json{{"ppu.dev/export", "exp"}}));
  EXPECT_FALSE(np.body["spec"].contains("ingress")) << np.body.dump();
  ASSERT_TRUE(eventually([&] { return exported_condition("exp").value("reason", "") == "ExportRunning"; }))
      << job("exp").dump();
  std::string out;
  ASSERT_EQ(env_->kubectl("get ppj exp", out), 0) << out;
  EXPECT_NE(out.find("EXPORT"), std::string::npos) << out;
  EXPECT_NE(out.find("ExportRunning"), std::string::npos) << out;

  finish_export("exp-export", 0, ppu::format_export_result({"hf", "bf16", "/checkpoints/model", 20}));
  ASSERT_TRUE(eventually([&] { return exported_condition("exp").value("status", "") == "True"; })) << job("exp").dump();
  const json st = job("exp")["status"];
  EXPECT_EQ(st["phase"], "Succeeded");
  EXPECT_EQ(exported_condition("exp")["reason"], "ModelExported");
  EXPECT_EQ(st["export"],
            (json{{"path", "model"}, {"format", "hf"}, {"dtype", "bf16"}, {"claimName", "exp-ckpt"}, {"round", 20}}))
      << st.dump();
  ASSERT_EQ(env_->kubectl("get ppj exp -o wide", out), 0) << out;
  EXPECT_NE(out.find("ModelExported"), std::string::npos) << out;
  EXPECT_NE(out.find("model"), std::string::npos) << out;
  EXPECT_TRUE(eventually([&] { return has_event("ExportStarted") && has_event("ModelExported"); }));
  ListOptions o;
  o.label_selector = "ppu.dev/job=exp";
  EXPECT_EQ(client_->list(ResourceKind::Job, "default", o).body["items"].size(), 1u) << "exactly one export Job";
}

TEST_F(OperatorIT, FailedExportIsAReasonOnTheSucceededJobAndDeletingItsJobRetries) {
  start_controller(1);
  json m = job_manifest("xf", 2);
  m["spec"]["checkpoint"] = {{"claimName", "xf-ckpt"}};
  m["spec"]["export"] = json::object();
  create_job(m);
  ASSERT_TRUE(wait_pods("xf", 2));
  set_all("xf", "Running");
  succeed_all("xf", 5);
  ASSERT_TRUE(eventually([&] { return client_->get(ResourceKind::Job, "default", "xf-export").ok(); }));
  const std::string first_uid = client_->get(ResourceKind::Job, "default", "xf-export").body["metadata"]["uid"];
  finish_export("xf-export", 4, "no valid checkpoint in /checkpoints: round-000005: global.pt fails its checksum");
  ASSERT_TRUE(eventually([&] { return exported_condition("xf").value("reason", "") == "ExportFailed"; }))
      << job("xf").dump();
  const json c = exported_condition("xf");
  EXPECT_EQ(c["status"], "False");
  const std::string msg = c["message"];
  EXPECT_NE(msg.find("exited with code 4: no valid checkpoint in /checkpoints"), std::string::npos) << msg;
  const json st = job("xf")["status"];
  EXPECT_EQ(st["phase"], "Succeeded") << "the training succeeded; only its export failed";
  EXPECT_FALSE(st.contains("reason")) << st.dump();
  EXPECT_FALSE(st.contains("export")) << st.dump();
  EXPECT_TRUE(eventually([&] { return has_event("ExportFailed"); }));
  std::string out;
  ASSERT_EQ(env_->kubectl("get ppj xf", out), 0) << out;
  EXPECT_NE(out.find("ExportFailed"), std::string::npos) << out;

  // Deleting the failed Job asks for another attempt: a new Job, and the condition runs again.
  ASSERT_TRUE(client_->remove(ResourceKind::Job, "default", "xf-export").ok());
  ASSERT_TRUE(eventually([&] {
    Response x = client_->get(ResourceKind::Job, "default", "xf-export");
    return x.ok() && x.body["metadata"]["uid"] != first_uid;
  }));
  EXPECT_TRUE(eventually([&] { return exported_condition("xf").value("reason", "") == "ExportRunning"; }))
      << job("xf").dump();
}

TEST_F(OperatorIT, CelRejectsAnExportThatCannotOutliveThePodsOrWouldCollide) {
  auto apply = [&](const std::string& name, const std::string& checkpoint, const std::string& exp, std::string& out) {
    const std::string yaml = "apiVersion: ppu.dev/v1alpha1\nkind: PPUJob\nmetadata: {name: " + name +
                             "}\nspec:\n  replicas: 2\n  image: ppu:test\n  training: {model: {preset: tiny}, "
                             "slicing: {mode: mlp, slices: 2}}\n" +
                             (checkpoint.empty() ? "" : "  checkpoint: " + checkpoint + "\n") + "  export: " + exp +
                             "\n";
    return env_->kubectl("apply -f -", out, yaml);
  };
  std::string out;
  EXPECT_NE(apply("e1", "{volumeSource: {emptyDir: {}}}", "{}", out), 0);
  EXPECT_NE(out.find("spec.export needs a checkpoint volume that outlives the pods"), std::string::npos) << out;
  EXPECT_NE(apply("e2", "", "{}", out), 0) << "no checkpoint volume: an emptyDir";
  EXPECT_NE(out.find("spec.export"), std::string::npos) << out;
  EXPECT_NE(apply("e3", "{volumeSource: {ephemeral: {volumeClaimTemplate: {spec: {}}}}}", "{}", out), 0);
  EXPECT_NE(out.find("spec.export"), std::string::npos) << out;
  for (const char* bad : {"../up", "/abs", "a/./b", "a//b", "model/"}) {
    EXPECT_NE(apply("p", "{claimName: c}", std::string("{path: \"") + bad + "\"}", out), 0) << bad;
    EXPECT_NE(out.find("spec.export.path"), std::string::npos) << bad << ": " << out;
  }
  EXPECT_NE(apply("r", "{claimName: c}", "{path: round-000012}", out), 0);
  EXPECT_NE(out.find("checkpoint store"), std::string::npos) << out;
  EXPECT_NE(apply("f", "{claimName: c}", "{format: onnx}", out), 0);
  EXPECT_NE(out.find("spec.export.format"), std::string::npos) << out;
  EXPECT_NE(apply("d", "{claimName: c}", "{dtype: fp16}", out), 0);
  EXPECT_NE(out.find("spec.export.dtype"), std::string::npos) << out;

  ASSERT_EQ(apply("ok1", "{claimName: c}", "{}", out), 0) << out;
  EXPECT_EQ(job("ok1")["spec"]["export"],
            (json{{"format", "hf"}, {"dtype", "fp32"}, {"path", "model"}, {"activeDeadlineSeconds", 3600}}))
      << "the defaults are the CRD's";
  EXPECT_EQ(apply("ok2", "{volumeSource: {persistentVolumeClaim: {claimName: c}}}", "{path: models/v1.2_final}", out),
            0)
      << out;
  EXPECT_EQ(
      apply("ok3", "{volumeSource: {nfs: {server: nfs.example, path: /ckpt}}}", "{format: ppu, dtype: bf16}", out), 0)
      << out;
}

TEST_F(OperatorIT, ActiveDeadlineFailsTheJob) {
  start_controller(1);
  json m = job_manifest("dl", 2);
  m["spec"]["runPolicy"]["activeDeadlineSeconds"] = 2;
  create_job(m);
  ASSERT_TRUE(wait_pods("dl", 2));
  ASSERT_TRUE(eventually([&] { return phase("dl") == "Failed"; })) << job("dl").dump();
  bool found = false;
  const json dl = job("dl");
  for (const auto& c : dl["status"]["conditions"])
    if (c["type"] == "Failed") found = c["reason"] == "DeadlineExceeded";
  EXPECT_TRUE(found) << job("dl").dump();
  EXPECT_TRUE(wait_pods("dl", 0));
}

TEST_F(OperatorIT, OperatorKilledMidReconcileLeavesNoDuplicatePods) {
  std::string log = env_->dir() + "/operator.log";
  std::vector<std::string> argv = {PPU_OPERATOR_BIN,
                                   "--kubeconfig",
                                   env_->kubeconfig(),
                                   "--namespace",
                                   "default",
                                   "--metrics-addr",
                                   "127.0.0.1:" + std::to_string(testing::free_port()),
                                   "--health-addr",
                                   "127.0.0.1:" + std::to_string(testing::free_port()),
                                   "--workers",
                                   "1",
                                   "--scrape-interval",
                                   "0"};
  testing::Process op = testing::spawn(argv, log);
  create_job(job_manifest("big", 32, 4));
  // Kill it while it is still creating the gang.
  ASSERT_TRUE(eventually([&] { return !pods("big").empty(); }));
  op.kill_hard();
  size_t at_kill = pods("big").size();
  RecordProperty("pods_at_kill", static_cast<int>(at_kill));
  std::cout << "operator killed with " << at_kill << " of 32 pods created\n";
  auto survivors = pod_uids("big");
  op = testing::spawn(argv, log);
  ASSERT_TRUE(wait_pods("big", 32)) << "had " << at_kill << " at kill";
  // Give the new operator time to act on anything it might (wrongly) duplicate.
  ASSERT_TRUE(eventually([&] { return job("big")["status"].value("activeRanks", 0) == 32; }));
  std::set<std::string> names;
  for (const auto& p : all_pods()) names.insert(p["metadata"]["name"].get<std::string>());
  EXPECT_EQ(all_pods().size(), 32u);
  EXPECT_EQ(names.size(), 32u);
  for (int r = 0; r < 32; ++r) EXPECT_TRUE(names.count("big-rank-" + std::to_string(r)));
  auto now = pod_uids("big");
  for (const auto& u : survivors) EXPECT_TRUE(now.count(u)) << "a pod created before the kill was replaced";
  EXPECT_EQ(restarts("big"), 0);
  EXPECT_EQ(op.terminate(), 0) << "graceful shutdown on SIGTERM";
}

TEST_F(OperatorIT, WatchDroppedOrApiserverRestartedRecovers) {
  start_controller(1);
  create_job(job_manifest("w1", 2));
  ASSERT_TRUE(wait_pods("w1", 2));
  // 1. The watch connection drops (client side).
  auto restarts_before = controller_->pod_informer().watch_restarts();
  controller_->pod_informer().drop_watch();
  controller_->job_informer().drop_watch();
  ASSERT_TRUE(eventually([&] { return controller_->pod_informer().watch_restarts() > restarts_before; }));
  set_all("w1", "Running");
  ASSERT_TRUE(eventually([&] { return phase("w1") == "Running"; })) << "pod updates after a dropped watch";
  // 2. The API server goes away and comes back (server side: every connection is cut). Its new
  // watch cache starts at the current etcd revision, so after one more unrelated write our
  // pod informer's resourceVersion is too old: the server answers 410 Gone and we must relist.
  auto relists_before = controller_->pod_informer().relists();
  json other = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "unrelated"}}}};
  ASSERT_TRUE(client_->create(ResourceKind::ConfigMap, "default", other).ok());
  env_->restart_apiserver();
  create_job(job_manifest("w2", 2));
  EXPECT_TRUE(wait_pods("w2", 2)) << "a job created after the restart is reconciled";
  set_pod_status("w1-rank-0", "Failed", 1, "crash");
  EXPECT_TRUE(eventually([&] { return restarts("w1") == 1; })) << "pod events still arrive";
  EXPECT_GT(controller_->pod_informer().relists(), relists_before) << "410 Gone after the restart ⇒ relist";
}

TEST_F(OperatorIT, RankMetricsAreScrapedIntoStatusAndGauges) {
  // One fake rank /metrics endpoint on loopback; every pod reports podIP 127.0.0.1.
  int port = testing::free_port();
  struct Metrics : CivetHandler {
    bool handleGet(CivetServer*, mg_connection* c) override {
      std::string body =
          "ppu_outer_round{rank=\"0\"} 7\nppu_eval_perplexity{rank=\"0\"} 42.5\n"
          "ppu_state_bytes{component=\"weights\"} 100\nppu_flops_executed_total 3\nppu_flops_full_backward_total 4\n"
          "ppu_live_ranks 2\nppu_min_slice_coverage 0.5\nppu_step 250\nppu_steps_target 1000\n"
          "ppu_remaining_seconds 90.4\nppu_stops 2\nppu_rounds_lost 3\nppu_last_stop_round 9\n"
          "ppu_last_stop_resumed_round 7\n";
      mg_printf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n%s", body.size(),
                body.c_str());
      return true;
    }
  } handler;
  CivetServer server({"listening_ports", "127.0.0.1:" + std::to_string(port)});
  server.addHandler("/metrics", &handler);

  start_controller(1);
  json m = job_manifest("mx", 2);
  m["spec"]["metricsPort"] = port;
  create_job(m);
  ASSERT_TRUE(wait_pods("mx", 2));
  for (const auto& p : pods("mx")) set_pod_status(p["metadata"]["name"], "Running", -1, "", "127.0.0.1");
  ASSERT_TRUE(eventually([&] { return phase("mx") == "Running"; }));
  scraper_ = std::make_unique<MetricsScraper>(*controller_, metrics_, 0.2);
  scraper_->start();
  ASSERT_TRUE(eventually([&] { return job("mx")["status"].value("outerRound", 0) == 7; })) << job("mx").dump();
  EXPECT_EQ(job("mx")["status"]["perplexity"], "42.500");
  EXPECT_EQ(job("mx")["status"].value("step", 0), 250);
  EXPECT_EQ(job("mx")["status"].value("steps", 0), 1000);
  EXPECT_EQ(job("mx")["status"].value("progressPercentage", 0), 25);
  EXPECT_EQ(job("mx")["status"].value("estimatedRemainingSeconds", 0), 90);
  // What the job's stops cost, through the CRD's schema (an unknown field would be pruned).
  EXPECT_EQ(job("mx")["status"].value("stops", 0), 2) << job("mx").dump();
  EXPECT_EQ(job("mx")["status"].value("roundsLost", 0), 3);
  EXPECT_EQ(job("mx")["status"]["lastStop"], (json{{"round", 9}, {"resumedRound", 7}, {"roundsLost", 2}}));
  EXPECT_TRUE(eventually([&] { return has_event("RoundsLost"); }));
  EXPECT_NE(event_message("RoundsLost").find("stopped at outer round 9 and resumed from round 7"), std::string::npos)
      << event_message("RoundsLost");
  std::string exposition = prometheus::TextSerializer().Serialize(metrics_.registry()->Collect());
  EXPECT_NE(exposition.find("ppu_job_outer_round{job=\"mx\",namespace=\"default\"} 7"), std::string::npos)
      << exposition;
  EXPECT_NE(exposition.find("ppu_job_flops_saved_ratio{job=\"mx\",namespace=\"default\"} 0.25"), std::string::npos);
  EXPECT_NE(exposition.find("ppu_job_state_bytes{component=\"weights\",job=\"mx\",namespace=\"default\"} 200"),
            std::string::npos);
  EXPECT_NE(exposition.find("ppu_operator_reconciles_total{result=\"success\"}"), std::string::npos);
  // A gang job has no live group in its status; the gauges pass on what its ranks report.
  EXPECT_FALSE(job("mx")["status"].contains("liveRanks")) << job("mx").dump();
  EXPECT_FALSE(job("mx")["status"].contains("minSliceCoverage"));
  EXPECT_NE(exposition.find("ppu_job_live_ranks{job=\"mx\",namespace=\"default\"} 2"), std::string::npos);
  EXPECT_NE(exposition.find("ppu_job_min_slice_coverage{job=\"mx\",namespace=\"default\"} 0.5"), std::string::npos);
  EXPECT_NE(exposition.find("ppu_job_progress_ratio{job=\"mx\",namespace=\"default\"} 0.25"), std::string::npos);
  EXPECT_NE(exposition.find("ppu_job_remaining_seconds{job=\"mx\",namespace=\"default\"} 90.4"), std::string::npos);
  EXPECT_NE(exposition.find("ppu_job_rounds_lost{job=\"mx\",namespace=\"default\"} 3"), std::string::npos);
  EXPECT_NE(exposition.find("ppu_job_stops{job=\"mx\",namespace=\"default\"} 2"), std::string::npos);
}

TEST_F(OperatorIT, LeaderElectionAllowsOneHolderAndHandsOver) {
  LeaseOptions o;
  o.ns = "default";
  o.lease_duration_s = 30;
  o.identity = "a";
  LeaderElector a(*client_, o);
  o.identity = "b";
  LeaderElector b(*client_, o);
  EXPECT_TRUE(a.try_acquire_or_renew());
  EXPECT_FALSE(b.try_acquire_or_renew()) << "lease held and not expired";
  EXPECT_TRUE(a.try_acquire_or_renew()) << "renewal";
  a.release();
  EXPECT_TRUE(eventually([&] { return b.try_acquire_or_renew(); }, 10)) << "released lease taken over";
  Response lease = client_->get(ResourceKind::Lease, "default", "ppu-operator-leader");
  EXPECT_EQ(lease.body["spec"]["holderIdentity"], "b");
  EXPECT_GE(lease.body["spec"]["leaseTransitions"].get<int>(), 1);
}

TEST_F(OperatorIT, BinaryServesHealthAndMetricsAndRejectsBadFlags) {
  int rc = 0;
  std::string out = testing::run_capture(std::string(PPU_OPERATOR_BIN) + " --scrape-interval=never", rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--scrape-interval"), std::string::npos) << out;

  int hp = testing::free_port(), mp = testing::free_port();
  testing::Process op = testing::spawn(
      {PPU_OPERATOR_BIN, "--kubeconfig", env_->kubeconfig(), "--leader-elect", "--leader-elect-namespace", "default",
       "--health-addr", "127.0.0.1:" + std::to_string(hp), "--metrics-addr", "127.0.0.1:" + std::to_string(mp)},
      env_->dir() + "/operator.log");
  std::string text;
  ASSERT_TRUE(eventually([&] {
    return KubeClient::http_get_text("http://127.0.0.1:" + std::to_string(hp) + "/readyz", 1, text).status == 200;
  }));
  EXPECT_EQ(KubeClient::http_get_text("http://127.0.0.1:" + std::to_string(hp) + "/healthz", 1, text).status, 200);
  create_job(job_manifest("bin", 2));
  ASSERT_TRUE(wait_pods("bin", 2));
  ASSERT_TRUE(eventually([&] {
    KubeClient::http_get_text("http://127.0.0.1:" + std::to_string(mp) + "/metrics", 1, text);
    return text.find("ppu_operator_reconciles_total{result=\"success\"}") != std::string::npos;
  })) << text;
  EXPECT_NE(text.find("ppu_operator_reconcile_duration_seconds_bucket"), std::string::npos);
  EXPECT_NE(text.find("ppu_operator_workqueue_depth"), std::string::npos);
  EXPECT_TRUE(client_->get(ResourceKind::Lease, "default", "ppu-operator-leader").ok());
  EXPECT_EQ(op.terminate(), 0);
  // On shutdown the lease is released for a standby.
  EXPECT_EQ(client_->get(ResourceKind::Lease, "default", "ppu-operator-leader").body["spec"]["holderIdentity"], "");
}

TEST_F(OperatorIT, KubeClientCrudApplyConflictsAndWatch) {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "c1"}, {"namespace", "default"}, {"labels", {{"ppu.dev/job", "x"}}}}},
             {"data", {{"a", "1"}}}};
  ASSERT_TRUE(client_->create(ResourceKind::ConfigMap, "default", cm).ok());
  EXPECT_EQ(client_->create(ResourceKind::ConfigMap, "default", cm).status, 409) << "AlreadyExists";
  // Server-side apply owns field b for manager "test".
  json applied = cm;
  applied["data"] = {{"b", "2"}};
  Response ap = client_->apply(ResourceKind::ConfigMap, "default", "c1", applied, "test");
  ASSERT_TRUE(ap.ok()) << ap.describe();
  EXPECT_EQ(ap.body["data"]["b"], "2");
  ASSERT_TRUE(client_->merge_patch(ResourceKind::ConfigMap, "default", "c1", {{"data", {{"c", "3"}}}}).ok());
  // A stale resourceVersion is refused with 409; update_with_retry re-reads and succeeds.
  json stale = client_->get(ResourceKind::ConfigMap, "default", "c1").body;
  ASSERT_TRUE(client_->merge_patch(ResourceKind::ConfigMap, "default", "c1", {{"data", {{"d", "4"}}}}).ok());
  stale["data"]["e"] = "5";
  EXPECT_EQ(client_->replace(ResourceKind::ConfigMap, "default", "c1", stale).status, 409);
  Response up = client_->update_with_retry(ResourceKind::ConfigMap, "default", "c1", [](json& o) {
    o["data"]["e"] = "5";
    return true;
  });
  ASSERT_TRUE(up.ok()) << up.describe();
  json now = client_->get(ResourceKind::ConfigMap, "default", "c1").body;
  EXPECT_EQ(now["data"], json({{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", "5"}}));

  // An informer sees adds, updates and deletes through its watch.
  std::atomic<int> added{0}, deleted{0};
  Informer inf(*client_, ResourceKind::ConfigMap, "default", "ppu.dev/job", [&](const json&, Informer::Change c) {
    if (c == Informer::Change::Added) added++;
    if (c == Informer::Change::Deleted) deleted++;
  });
  inf.start();
  ASSERT_TRUE(eventually([&] { return inf.synced() && inf.get("default", "c1").has_value(); }));
  EXPECT_FALSE(inf.get("default", "c1")->at("metadata").contains("managedFields"));
  cm["metadata"]["name"] = "c2";
  ASSERT_TRUE(client_->create(ResourceKind::ConfigMap, "default", cm).ok());
  EXPECT_TRUE(eventually([&] { return inf.by_job("default", "x").size() == 2; }));
  // A uid precondition protects a newer object of the same name.
  EXPECT_EQ(client_->remove(ResourceKind::ConfigMap, "default", "c2", "Background", "not-its-uid").status, 409);
  EXPECT_TRUE(client_->get(ResourceKind::ConfigMap, "default", "c2").ok());
  // Foreground propagation is honoured: with no garbage collector running here, the object
  // waits with the foregroundDeletion finalizer until we remove it.
  ASSERT_TRUE(client_->remove(ResourceKind::ConfigMap, "default", "c1", "Foreground").ok());
  json doomed = client_->get(ResourceKind::ConfigMap, "default", "c1").body;
  EXPECT_EQ(doomed["metadata"]["finalizers"], json::array({"foregroundDeletion"})) << doomed.dump();
  EXPECT_TRUE(eventually([&] {
    auto c = inf.get("default", "c1");
    return c && c->at("metadata").contains("deletionTimestamp");
  }));
  ASSERT_TRUE(
      client_->merge_patch(ResourceKind::ConfigMap, "default", "c1", {{"metadata", {{"finalizers", nullptr}}}}).ok());
  EXPECT_TRUE(eventually([&] { return deleted.load() == 1 && !inf.get("default", "c1"); }));
  EXPECT_EQ(client_->remove(ResourceKind::ConfigMap, "default", "c1").status, 404);
  inf.stop();
  EXPECT_EQ(added.load(), 2);
}

TEST_F(OperatorIT, RbacManifestAllowsEveryVerbTheOperatorUses) {
  // Every (verb, resource) the executor, informers, TTL and leader election use, checked with
  // `kubectl auth can-i` as the operator's service account from manifests/rbac/.
  std::string out;
  ASSERT_EQ(env_->kubectl("create namespace ppu-system", out), 0) << out;
  ASSERT_EQ(env_->kubectl(std::string("apply -f ") + PPU_SOURCE_DIR + "/manifests/rbac/", out), 0) << out;
  const std::string as = " --as=system:serviceaccount:ppu-system:ppu-operator";
  const std::vector<std::pair<std::string, std::string>> needed = {
      {"get", "ppujobs.ppu.dev"},
      {"list", "ppujobs.ppu.dev"},
      {"watch", "ppujobs.ppu.dev"},
      {"delete", "ppujobs.ppu.dev"},  // ttlSecondsAfterFinished
      {"update", "ppujobs.ppu.dev/status"},
      {"create", "pods"},
      {"delete", "pods"},
      {"list", "pods"},
      {"watch", "pods"},
      {"create", "services"},
      {"list", "services"},
      {"watch", "services"},
      {"create", "configmaps"},
      {"patch", "configmaps"},
      {"list", "configmaps"},
      {"watch", "configmaps"},
      {"create", "events"},
      {"create", "networkpolicies.networking.k8s.io"},
      {"patch", "networkpolicies.networking.k8s.io"},
      {"list", "networkpolicies.networking.k8s.io"},
      {"watch", "networkpolicies.networking.k8s.io"},
      {"create", "jobs.batch"},  // spec.export: the export Job
      {"get", "jobs.batch"},
      {"list", "jobs.batch"},
      {"watch", "jobs.batch"},
      {"delete", "jobs.batch"}};  // replaced when spec.export changes
  for (const auto& [verb, res] : needed) {
    std::string sub = res.find('/') != std::string::npos ? " --subresource=" + res.substr(res.find('/') + 1) : "";
    std::string r = res.substr(0, res.find('/'));
    EXPECT_EQ(env_->kubectl("auth can-i " + verb + " " + r + sub + " -n default" + as, out), 0)
        << "manifests/rbac/ does not allow '" << verb << " " << res << "': " << out;
  }
  for (const char* verb : {"get", "create", "update"})
    EXPECT_EQ(env_->kubectl(std::string("auth can-i ") + verb + " leases.coordination.k8s.io -n ppu-system" + as, out),
              0)
        << "leader election needs " << verb << " on leases: " << out;
  // --force-delete-on-lost-node (the default) reads Nodes: cluster-scoped.
  for (const char* verb : {"get", "list", "watch"})
    EXPECT_EQ(env_->kubectl(std::string("auth can-i ") + verb + " nodes" + as, out), 0)
        << "manifests/rbac/ does not allow '" << verb << " nodes': " << out;
  // --metrics-auth=token (the chart's default) reviews scrapers' tokens: cluster-scoped creates.
  for (const char* res : {"tokenreviews.authentication.k8s.io", "subjectaccessreviews.authorization.k8s.io"})
    EXPECT_EQ(env_->kubectl(std::string("auth can-i create ") + res + as, out), 0) << res << ": " << out;
}

TEST_F(OperatorIT, RbacManifestGrantsEverythingTheOperatorUses) {
  // Run the binary as the ppu-operator service account (token from the TokenRequest API), so a
  // verb missing from manifests/rbac shows up as a 403 here.
  std::string out;
  ASSERT_EQ(env_->kubectl("create namespace ppu-system", out), 0) << out;
  ASSERT_EQ(env_->kubectl(std::string("apply -f ") + PPU_SOURCE_DIR + "/manifests/rbac/", out), 0) << out;
  ASSERT_EQ(env_->kubectl("-n ppu-system create token ppu-operator --duration=1h", out), 0) << out;
  std::string token = out.substr(0, out.find_first_of("\r\n"));
  RestConfig admin = load_kubeconfig(env_->kubeconfig());
  std::string ca_path = env_->dir() + "/sa-ca.crt", kc_path = env_->dir() + "/sa-kubeconfig";
  std::ofstream(ca_path) << admin.ca_pem;
  std::ofstream(kc_path)
      << "apiVersion: v1\nkind: Config\ncurrent-context: sa\nclusters:\n- name: c\n  cluster: {server: \""
      << admin.server << "\", certificate-authority: " << ca_path << "}\nusers:\n- name: sa\n  user: {token: \""
      << token << "\"}\ncontexts:\n- name: sa\n  context: {cluster: c, user: sa}\n";
  // The service account itself may not create PPUJobs.
  KubeClient sa(load_kubeconfig(kc_path));
  EXPECT_EQ(sa.create(ResourceKind::PPUJob, "default", job_manifest("nope", 2)).status, 403);

  std::string log = env_->dir() + "/operator-sa.log";
  testing::Process op =
      testing::spawn({PPU_OPERATOR_BIN, "--kubeconfig", kc_path, "--leader-elect", "--leader-elect-namespace",
                      "ppu-system", "--health-addr", "0", "--metrics-addr", "0", "--restart-backoff", "1s"},
                     log);
  create_job(job_manifest("rb", 2));
  ASSERT_TRUE(wait_pods("rb", 2));
  set_all("rb", "Running");
  set_pod_status("rb-rank-1", "Failed", 1, "crash");
  EXPECT_TRUE(eventually([&] { return restarts("rb") == 1; })) << job("rb").dump();
  EXPECT_TRUE(eventually([&] { return has_event("GangRestart"); }));
  EXPECT_TRUE(client_->get(ResourceKind::Lease, "ppu-system", "ppu-operator-leader").ok());
  EXPECT_EQ(op.terminate(), 0);
  int rc = 0;
  std::string logged = testing::run_capture("cat " + log, rc);
  EXPECT_EQ(logged.find("forbidden"), std::string::npos) << logged;
}

}  // namespace
}  // namespace ppu::op

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
