// Security integration tests (docs/SECURITY.md) against a real kube-apiserver + etcd: rank pods
// admitted in a namespace that enforces the "restricted" Pod Security Standard; refusals by
// PodSecurity and by a ResourceQuota shown on the PPUJob (condition, event, kubectl column) and
// recovered from once the cause is fixed; the per-job NetworkPolicy read back and evaluated
// against the pods; the operator's /metrics refusing unauthenticated and unauthorized scrapes.
// There is no kubelet or kube-controller-manager: the tests play them where needed (pod status,
// ResourceQuota status).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <set>

#include "controller/controller.h"
#include "kube/kube_client.h"
#include "kube_test_env.h"
#include "reconcile/job_status.h"
#include "reconcile/ppujob_status.h"

namespace ppu::op {
namespace {

using testing::eventually;
using testing::KubeTestEnv;

class SecurityIT : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KubeTestEnv>();
    client_ = std::make_unique<KubeClient>(load_kubeconfig(env_->kubeconfig()));
  }
  void TearDown() override {
    if (controller_) controller_->stop();
    controller_.reset();
    client_.reset();
    env_.reset();
  }

  void start_controller(bool network_policy = true) {
    ControllerOptions o;
    o.ns = "";  // all namespaces
    o.workers = 2;
    o.reconcile.network_policy = network_policy;
    o.reconcile.metrics_namespaces = {"ppu-system", "monitoring"};
    controller_ = std::make_unique<Controller>(*client_, o);
    controller_->start_informers();
    controller_->start_workers();
  }

  std::string kubectl(const std::string& args, const std::string& stdin_text = "") {
    std::string out;
    int rc = env_->kubectl(args, out, stdin_text);
    EXPECT_EQ(rc, 0) << "kubectl " << args << ": " << out;
    return out;
  }

  json job_manifest(const std::string& ns, const std::string& name, int replicas) {
    return json{{"apiVersion", "ppu.dev/v1alpha1"},
                {"kind", "PPUJob"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"spec",
                 {{"replicas", replicas},
                  {"image", "ppu:test"},
                  {"training", {{"model", {{"preset", "tiny"}}}, {"slicing", {{"mode", "mlp"}, {"slices", 2}}}}}}}};
  }
  void create_job(const json& manifest) {
    Response r = client_->create(ResourceKind::PPUJob, manifest["metadata"]["namespace"], manifest);
    ASSERT_TRUE(r.ok()) << r.describe();
  }
  json job(const std::string& ns, const std::string& name) { return client_->get(ResourceKind::PPUJob, ns, name).body; }
  json status(const std::string& ns, const std::string& name) { return job(ns, name).value("status", json::object()); }
  std::string condition_status(const std::string& ns, const std::string& name, const std::string& type) {
    const PPUJobStatus st = status_of(job(ns, name));
    const Condition* c = st.condition(type);
    return c ? c->status : "";
  }

  std::vector<json> pods(const std::string& ns, const std::string& selector) {
    ListOptions o;
    o.label_selector = selector;
    std::vector<json> out;
    const Response r = client_->list(ResourceKind::Pod, ns, o);
    for (const auto& p : r.body["items"])
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p);
    return out;
  }
  std::vector<json> job_pods(const std::string& ns, const std::string& name) {
    return pods(ns, std::string(kJobLabel) + "=" + name);
  }
  std::vector<json> events(const std::string& ns, const std::string& reason) {
    std::vector<json> out;
    const Response r = client_->list(ResourceKind::Event, ns);
    for (const auto& e : r.body["items"])
      if (e.value("reason", "") == reason) out.push_back(e);
    return out;
  }

  std::unique_ptr<KubeTestEnv> env_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(SecurityIT, RestrictedNamespaceAdmitsEveryRankAndRefusalsAreVisibleThenRecover) {
  kubectl("create namespace secure");
  kubectl(
      "label namespace secure pod-security.kubernetes.io/enforce=restricted "
      "pod-security.kubernetes.io/enforce-version=latest");
  start_controller();

  // Defaults: every rank admitted by PodSecurity "restricted".
  create_job(job_manifest("secure", "demo", 4));
  ASSERT_TRUE(eventually([&] { return job_pods("secure", "demo").size() == 4; })) << status("secure", "demo").dump();
  for (const auto& p : job_pods("secure", "demo")) {
    EXPECT_EQ(p["spec"]["securityContext"]["runAsUser"], 65532);
    EXPECT_EQ(p["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
  }
  EXPECT_EQ(condition_status("secure", "demo", kRefusedCondition), "");
  // The server agrees nothing in the namespace would violate "restricted" (no warnings).
  std::string out;
  ASSERT_EQ(env_->kubectl("label --dry-run=server --overwrite namespace secure "
                          "pod-security.kubernetes.io/enforce=restricted",
                          out),
            0)
      << out;
  EXPECT_EQ(out.find("Warning"), std::string::npos) << out;

  // A replacement security context that runs as root is refused by PodSecurity ...
  json rooty = job_manifest("secure", "rooty", 2);
  rooty["spec"]["podSecurityContext"] = {{"runAsUser", 0}, {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  create_job(rooty);
  ASSERT_TRUE(eventually([&] { return condition_status("secure", "rooty", kRefusedCondition) == "True"; }))
      << status("secure", "rooty").dump();
  json st = status("secure", "rooty");
  const PPUJobStatus typed = st.get<PPUJobStatus>();
  const Condition* c = typed.condition(kRefusedCondition);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "PodSecurity");
  EXPECT_NE(c->message.find("violates PodSecurity \"restricted:latest\""), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("runAsUser=0"), std::string::npos) << "the server's own words: " << c->message;
  EXPECT_EQ(st["reason"], "PodSecurity");
  EXPECT_TRUE(job_pods("secure", "rooty").empty());
  out = kubectl("get ppj rooty -n secure");
  EXPECT_NE(out.find("REASON"), std::string::npos) << out;
  EXPECT_NE(out.find("PodSecurity"), std::string::npos) << out;
  out = kubectl("get ppj rooty -n secure -o wide");
  EXPECT_NE(out.find("violates PodSecurity"), std::string::npos) << out;
  ASSERT_TRUE(eventually([&] { return events("secure", kRefusedCondition).size() == 1; }));
  EXPECT_EQ(events("secure", kRefusedCondition)[0]["type"], "Warning");

  // ... and once the override is removed, the job proceeds on its own.
  ASSERT_TRUE(
      client_->merge_patch(ResourceKind::PPUJob, "secure", "rooty", {{"spec", {{"podSecurityContext", nullptr}}}})
          .ok());
  ASSERT_TRUE(eventually([&] { return job_pods("secure", "rooty").size() == 2; }, 120))
      << status("secure", "rooty").dump();
  ASSERT_TRUE(eventually([&] { return condition_status("secure", "rooty", kRefusedCondition) == "False"; }))
      << status("secure", "rooty").dump();
  st = status("secure", "rooty");
  EXPECT_FALSE(st.contains("reason")) << st.dump();
  EXPECT_EQ(st["restartCount"], 0) << "refusals do not count against backoffLimit";
  EXPECT_EQ(events("secure", kRefusedCondition).size(), 1u) << "one event per distinct refusal";
}

TEST_F(SecurityIT, ZeroPodQuotaRefusalIsVisibleDeduplicatedAndRecoversWhenRaised) {
  kubectl("create namespace tight");
  kubectl("create quota pods -n tight --hard=pods=0");
  // Measured against this kube-apiserver: a quota whose status is still empty refuses nothing;
  // admission compares against status.hard, which kube-controller-manager fills in. Play it.
  auto set_quota = [&](const std::string& n) {
    ASSERT_TRUE(
        client_->merge_patch(ResourceKind::ResourceQuota, "tight", "pods", {{"spec", {{"hard", {{"pods", n}}}}}}).ok());
    Response r = client_->merge_patch(ResourceKind::ResourceQuota, "tight", "pods",
                                      {{"status", {{"hard", {{"pods", n}}}, {"used", {{"pods", "0"}}}}}}, "status");
    ASSERT_TRUE(r.ok()) << r.describe();
  };
  set_quota("0");
  start_controller();
  create_job(job_manifest("tight", "squeezed", 2));

  ASSERT_TRUE(eventually([&] { return condition_status("tight", "squeezed", kRefusedCondition) == "True"; }))
      << status("tight", "squeezed").dump();
  json st = status("tight", "squeezed");
  const PPUJobStatus typed = st.get<PPUJobStatus>();
  const Condition* c = typed.condition(kRefusedCondition);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "QuotaExceeded");
  EXPECT_NE(c->message.find("exceeded quota: pods"), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("HTTP 403"), std::string::npos) << c->message;
  EXPECT_EQ(st["phase"], "Pending");
  std::string out = kubectl("get ppj -n tight");
  EXPECT_NE(out.find("QuotaExceeded"), std::string::npos) << out;
  // The operator keeps retrying (with back-off) but reports the refusal once.
  const uint64_t before = controller_->reconciles();
  ASSERT_TRUE(eventually([&] { return controller_->reconciles() >= before + 3; }));
  EXPECT_EQ(events("tight", kRefusedCondition).size(), 1u);
  EXPECT_TRUE(job_pods("tight", "squeezed").empty());
  // The objects that are not pods were created (the quota is on pods only).
  EXPECT_TRUE(client_->get(ResourceKind::ConfigMap, "tight", "squeezed-config").ok());
  EXPECT_TRUE(client_->get(ResourceKind::NetworkPolicy, "tight", "squeezed").ok());

  set_quota("10");
  ASSERT_TRUE(eventually([&] { return job_pods("tight", "squeezed").size() == 2; }, 120))
      << status("tight", "squeezed").dump();
  ASSERT_TRUE(eventually([&] { return condition_status("tight", "squeezed", kRefusedCondition) == "False"; }));
  st = status("tight", "squeezed");
  EXPECT_EQ(st["restartCount"], 0);
  EXPECT_FALSE(st.contains("reason"));
  // The event follows the status write that clears the condition, so it may land a moment later.
  EXPECT_TRUE(eventually([&] { return events("tight", "Created").size() == 1u; }));
  out = kubectl("get ppj -n tight");
  EXPECT_EQ(out.find("QuotaExceeded"), std::string::npos) << out;
}

// The label selector of a NetworkPolicy peer or target (matchLabels only, as the operator writes).
std::string selector_of(const json& label_selector) {
  std::string s;
  for (auto it = label_selector["matchLabels"].begin(); it != label_selector["matchLabels"].end(); ++it)
    s += (s.empty() ? "" : ",") + it.key() + "=" + it.value().get<std::string>();
  return s;
}

std::set<std::string> names(const std::vector<json>& objs) {
  std::set<std::string> s;
  for (const auto& o : objs) s.insert(o["metadata"]["name"].get<std::string>());
  return s;
}

TEST_F(SecurityIT, NetworkPolicySelectsExactlyTheJobsPodsAndPorts) {
  start_controller();
  json a = job_manifest("default", "a", 2);
  a["spec"]["masterPort"] = 29600;
  a["spec"]["metricsPort"] = 9300;
  create_job(a);
  create_job(job_manifest("default", "b", 2));
  // A bystander pod in the same namespace.
  kubectl("apply -f -",
          "apiVersion: v1\nkind: Pod\nmetadata: {name: stranger, labels: {app: x}}\n"
          "spec: {containers: [{name: c, image: busybox}]}\n");
  ASSERT_TRUE(eventually([&] { return job_pods("default", "a").size() == 2 && job_pods("default", "b").size() == 2; }));
  Response r = client_->get(ResourceKind::NetworkPolicy, "default", "a");
  ASSERT_TRUE(r.ok()) << r.describe();
  const json np = r.body;
  EXPECT_EQ(np["metadata"]["ownerReferences"][0]["uid"], job("default", "a")["metadata"]["uid"]);
  const json& spec = np["spec"];
  const std::set<std::string> a_pods = {"a-rank-0", "a-rank-1"};
  // Target: exactly a's pods (not b's, not the stranger).
  EXPECT_EQ(names(pods("default", selector_of(spec["podSelector"]))), a_pods);
  EXPECT_EQ(spec["policyTypes"], json::array({"Ingress"}));
  ASSERT_EQ(spec["ingress"].size(), 2u) << spec.dump();
  // Rule 1: a's own pods, every port (TCPStore on masterPort 29600, Gloo on ephemeral ports).
  const json& peers = spec["ingress"][0];
  EXPECT_FALSE(peers.contains("ports")) << peers.dump();
  ASSERT_EQ(peers["from"].size(), 1u);
  EXPECT_FALSE(peers["from"][0].contains("namespaceSelector")) << "same namespace only";
  EXPECT_EQ(names(pods("default", selector_of(peers["from"][0]["podSelector"]))), a_pods);
  // Rule 2: only the metrics port, only from the named namespaces.
  const json& scrape = spec["ingress"][1];
  EXPECT_EQ(scrape["ports"], json::array({{{"protocol", "TCP"}, {"port", 9300}}}));
  ASSERT_EQ(scrape["from"].size(), 1u);
  EXPECT_FALSE(scrape["from"][0].contains("podSelector"));
  const json& ns_sel = scrape["from"][0]["namespaceSelector"];
  // Evaluate it against real namespaces: only ppu-system and monitoring match (they carry the
  // kubernetes.io/metadata.name label the API server sets on every namespace).
  kubectl("create namespace ppu-system");
  kubectl("create namespace monitoring");
  kubectl("create namespace elsewhere");
  std::string sel = ns_sel["matchExpressions"][0]["key"].get<std::string>() + " in (";
  for (const auto& v : ns_sel["matchExpressions"][0]["values"]) sel += v.get<std::string>() + ",";
  sel.back() = ')';
  ASSERT_EQ(ns_sel["matchExpressions"][0]["operator"], "In");
  std::string out = kubectl("get namespaces -o name -l '" + sel + "'");
  EXPECT_EQ(out, "namespace/monitoring\nnamespace/ppu-system\n");

  // Edited by hand (opened to everyone): the operator puts it back.
  ASSERT_TRUE(client_
                  ->merge_patch(ResourceKind::NetworkPolicy, "default", "a",
                                {{"spec", {{"ingress", json::array({json::object()})}}}})
                  .ok());
  EXPECT_TRUE(eventually([&] {
    return client_->get(ResourceKind::NetworkPolicy, "default", "a").body["spec"]["ingress"] == spec["ingress"];
  }));
  // Deleted: re-created.
  ASSERT_TRUE(client_->remove(ResourceKind::NetworkPolicy, "default", "a").ok());
  EXPECT_TRUE(eventually([&] { return client_->get(ResourceKind::NetworkPolicy, "default", "a").ok(); }));
  EXPECT_EQ(client_->get(ResourceKind::NetworkPolicy, "default", "b").body["spec"]["podSelector"]["matchLabels"],
            json({{"ppu.dev/job", "b"}}));
}

TEST_F(SecurityIT, SecurityContextsAreValidatedByTheCrdSchema) {
  // Admission of the PPUJob itself (no controller): each bad field is refused with its path.
  auto refusal = [&](const std::string& name, const json& patch) {
    json m = job_manifest("default", name, 2);
    m["spec"].update(patch);
    return client_->create(ResourceKind::PPUJob, "default", m);
  };
  Response r = refusal("bad-uid", {{"podSecurityContext", {{"runAsUser", "root"}}}});
  EXPECT_EQ(r.status, 422) << r.describe();
  EXPECT_NE(r.describe().find("spec.podSecurityContext.runAsUser"), std::string::npos) << r.describe();
  r = refusal("bad-seccomp", {{"securityContext", {{"seccompProfile", {{"type", "Bogus"}}}}}});
  EXPECT_EQ(r.status, 422) << r.describe();
  EXPECT_NE(r.describe().find("spec.securityContext.seccompProfile.type"), std::string::npos) << r.describe();
  r = refusal("no-profile", {{"podSecurityContext", {{"seccompProfile", {{"type", "Localhost"}}}}}});
  EXPECT_EQ(r.status, 422) << r.describe();
  EXPECT_NE(r.describe().find("localhostProfile is required"), std::string::npos) << r.describe();
  r = refusal("bad-policy", {{"podSecurityContext", {{"fsGroupChangePolicy", "Sometimes"}}}});
  EXPECT_EQ(r.status, 422) << r.describe();
  // The GPU override of docs/SECURITY.md is accepted and stored as written.
  const json gpu_pod = {{"runAsNonRoot", true},       {"runAsUser", 1000},
                        {"runAsGroup", 1000},         {"fsGroup", 1000},
                        {"supplementalGroups", {44}}, {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  const json gpu_ctr = {
      {"allowPrivilegeEscalation", false}, {"readOnlyRootFilesystem", true}, {"capabilities", {{"drop", {"ALL"}}}}};
  r = refusal("gpu", {{"podSecurityContext", gpu_pod}, {"securityContext", gpu_ctr}});
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(job("default", "gpu")["spec"]["podSecurityContext"], gpu_pod);
  EXPECT_EQ(job("default", "gpu")["spec"]["securityContext"], gpu_ctr);
}

TEST_F(SecurityIT, NetworkPolicyOffCreatesNone) {
  start_controller(/*network_policy=*/false);
  create_job(job_manifest("default", "open", 2));
  ASSERT_TRUE(eventually([&] { return job_pods("default", "open").size() == 2; }));
  EXPECT_EQ(client_->list(ResourceKind::NetworkPolicy, "default").body["items"].size(), 0u);
}

// HTTP status of GET url with an optional bearer token (curl, so the request is a plain client's).
int http_status(const std::string& url, const std::string& token, std::string* body = nullptr) {
  std::string out_file = "/tmp/ppu-sec-metrics-" + std::to_string(::getpid());
  std::string cmd = "curl -s -o " + out_file + " -w '%{http_code}' --max-time 10 " +
                    (token.empty() ? "" : "-H 'Authorization: Bearer " + token + "' ") + url;
  int rc = 0;
  std::string code = testing::run_capture(cmd, rc);
  if (body) *body = testing::run_capture("cat " + out_file, rc);
  std::remove(out_file.c_str());
  return std::atoi(code.c_str());
}

TEST_F(SecurityIT, MetricsRefuseUnauthenticatedAndUnauthorizedScrapes) {
  // The operator runs as its service account from manifests/rbac/ (rendered from the chart), so
  // the TokenReview/SubjectAccessReview permissions the chart grants are exercised too.
  kubectl("create namespace ppu-system");
  kubectl(std::string("apply -f ") + PPU_SOURCE_DIR + "/manifests/rbac/");
  kubectl("create namespace monitoring");
  kubectl("-n monitoring create serviceaccount prometheus");
  kubectl("-n monitoring create serviceaccount stranger");
  kubectl(
      "create clusterrolebinding prometheus-ppu-metrics --clusterrole=ppu-operator-metrics-reader "
      "--serviceaccount=monitoring:prometheus");
  auto token = [&](const std::string& ns, const std::string& sa) {
    std::string out = kubectl("-n " + ns + " create token " + sa + " --duration=1h");
    return out.substr(0, out.find_first_of("\r\n"));
  };
  RestConfig admin = load_kubeconfig(env_->kubeconfig());
  std::string ca_path = env_->dir() + "/sa-ca.crt", kc_path = env_->dir() + "/sa-kubeconfig";
  std::ofstream(ca_path) << admin.ca_pem;
  std::ofstream(kc_path)
      << "apiVersion: v1\nkind: Config\ncurrent-context: sa\nclusters:\n- name: c\n  cluster: {server: \""
      << admin.server << "\", certificate-authority: " << ca_path << "}\nusers:\n- name: sa\n  user: {token: \""
      << token("ppu-system", "ppu-operator") << "\"}\ncontexts:\n- name: sa\n  context: {cluster: c, user: sa}\n";
  const int port = testing::free_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  const std::string log = env_->dir() + "/operator.log";
  testing::Process op = testing::spawn(
      {PPU_OPERATOR_BIN, "--kubeconfig", kc_path, "--health-addr", "0", "--metrics-addr",
       "127.0.0.1:" + std::to_string(port), "--metrics-auth", "token", "--metrics-namespaces", "ppu-system,monitoring"},
      log);
  auto read_log = [&] {
    int rc = 0;
    return testing::run_capture("cat " + log, rc);
  };
  ASSERT_TRUE(eventually([&] { return http_status(url, "") != 0; }, 30)) << "operator did not listen: " << read_log();

  std::string body;
  EXPECT_EQ(http_status(url, "", &body), 401) << body;
  EXPECT_EQ(http_status(url, "not-a-token", &body), 401) << body;
  EXPECT_EQ(http_status(url, token("monitoring", "stranger"), &body), 403) << body;
  EXPECT_NE(body.find("system:serviceaccount:monitoring:stranger"), std::string::npos) << body;
  const std::string good = token("monitoring", "prometheus");
  EXPECT_EQ(http_status(url, good, &body), 200) << body;
  EXPECT_NE(body.find("# TYPE ppu_operator_workqueue_depth gauge"), std::string::npos) << body;
  // The same operator (as its service account) still reconciles, NetworkPolicy included, and
  // the authorized scrape (a cached decision by now) shows it.
  create_job(job_manifest("default", "m", 2));
  EXPECT_TRUE(eventually([&] { return job_pods("default", "m").size() == 2; }));
  EXPECT_TRUE(client_->get(ResourceKind::NetworkPolicy, "default", "m").ok());
  EXPECT_EQ(http_status(url, good, &body), 200) << body;
  EXPECT_NE(body.find("ppu_operator_reconciles_total{result=\"success\"}"), std::string::npos) << body;
  EXPECT_EQ(http_status(url, "", &body), 401) << "still refused without a token: " << body;
  EXPECT_EQ(op.terminate(), 0);
  std::string logged = read_log();
  EXPECT_EQ(logged.find("forbidden"), std::string::npos) << logged;
  EXPECT_EQ(logged.find("failed"), std::string::npos) << logged;
}

}  // namespace
}  // namespace ppu::op

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
