// Unit tests of the security defaults (docs/SECURITY.md): restricted pod security contexts and
// their replacement, the per-job NetworkPolicy, refusals turned into PodCreationFailed, the
// classification of API refusals, and the security flags.
#include <gtest/gtest.h>

#include "cmd/flags.h"
#include "controller/executor.h"
#include "reconcile/job_status.h"
#include "reconcile/object_builder.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::condition_of;
using testing::count;
using testing::count_events;
using testing::gang;
using testing::make_job;
using testing::new_status;
using testing::observed;

const json* mount_at(const json& pod, const std::string& path) {
  for (const auto& m : pod["spec"]["containers"][0]["volumeMounts"])
    if (m["mountPath"] == path) return &m;
  return nullptr;
}

TEST(Security, RankPodsPassRestrictedByDefault) {
  json pod = testing::rank_pod(parse_job(make_job("demo", 2)), 0, 0);
  const json& psc = pod["spec"]["securityContext"];
  EXPECT_EQ(psc["runAsNonRoot"], true);
  EXPECT_EQ(psc["runAsUser"], 65532);
  EXPECT_EQ(psc["runAsGroup"], 65532);
  EXPECT_EQ(psc["fsGroup"], 65532);
  EXPECT_EQ(psc["seccompProfile"]["type"], "RuntimeDefault");
  const json& sc = pod["spec"]["containers"][0]["securityContext"];
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
  EXPECT_EQ(sc["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_FALSE(sc["capabilities"].contains("add"));
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], false);
  // Writable: /tmp (emptyDir) and the checkpoint volume; the config is read-only.
  const json* tmp = mount_at(pod, "/tmp");
  ASSERT_NE(tmp, nullptr);
  EXPECT_FALSE(tmp->value("readOnly", false));
  bool tmp_is_empty_dir = false;
  for (const auto& v : pod["spec"]["volumes"])
    if (v["name"] == (*tmp)["name"]) tmp_is_empty_dir = v.contains("emptyDir");
  EXPECT_TRUE(tmp_is_empty_dir);
  ASSERT_NE(mount_at(pod, "/checkpoints"), nullptr);
  EXPECT_FALSE(mount_at(pod, "/checkpoints")->value("readOnly", false));
  EXPECT_EQ(mount_at(pod, "/etc/ppu")->value("readOnly", false), true);
}

TEST(Security, GivenSecurityContextsReplaceTheDefaultsWhole) {
  json job = make_job("demo", 2);
  // The GPU case of docs/SECURITY.md: an image whose user is 1000, supplemental video group.
  job["spec"]["podSecurityContext"] = {{"runAsUser", 1000},
                                       {"runAsNonRoot", true},
                                       {"supplementalGroups", {44}},
                                       {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  job["spec"]["securityContext"] = {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}};
  job["spec"]["scheduling"] = {{"automountServiceAccountToken", true}};
  json pod = testing::rank_pod(parse_job(job), 1, 0);
  EXPECT_EQ(pod["spec"]["securityContext"], job["spec"]["podSecurityContext"]) << "no merge with the defaults";
  EXPECT_FALSE(pod["spec"]["securityContext"].contains("fsGroup"));
  EXPECT_EQ(pod["spec"]["containers"][0]["securityContext"], job["spec"]["securityContext"]);
  EXPECT_FALSE(pod["spec"]["containers"][0]["securityContext"].contains("readOnlyRootFilesystem"));
  EXPECT_EQ(pod["spec"]["automountServiceAccountToken"], true);
}

TEST(Security, NetworkPolicyAdmitsOnlyTheJobsPodsAndScrapersOfTheMetricsPort) {
  json job = make_job("demo", 4);
  job["spec"]["metricsPort"] = 9200;
  json np = build_network_policy(parse_job(job), {"ppu-system", "monitoring"});
  EXPECT_EQ(np["kind"], "NetworkPolicy");
  EXPECT_EQ(np["metadata"]["name"], "demo");
  EXPECT_EQ(np["metadata"]["ownerReferences"][0]["uid"], "0123456789abcdef");
  const json& spec = np["spec"];
  EXPECT_EQ(spec["podSelector"], json({{"matchLabels", {{"ppu.dev/job", "demo"}}}}));
  EXPECT_EQ(spec["policyTypes"], json::array({"Ingress"})) << "egress (DNS, data) is not restricted";
  ASSERT_EQ(spec["ingress"].size(), 2u);
  // Peers: every port (rendezvous on masterPort, Gloo pairs on ephemeral ports), only this job.
  const json& peers = spec["ingress"][0];
  EXPECT_FALSE(peers.contains("ports"));
  ASSERT_EQ(peers["from"].size(), 1u);
  EXPECT_EQ(peers["from"][0], json({{"podSelector", {{"matchLabels", {{"ppu.dev/job", "demo"}}}}}}));
  // Scrapers: only the metrics port, only from the named namespaces.
  const json& scrape = spec["ingress"][1];
  EXPECT_EQ(scrape["ports"], json::array({{{"protocol", "TCP"}, {"port", 9200}}}));
  const json& sel = scrape["from"][0]["namespaceSelector"]["matchExpressions"][0];
  EXPECT_EQ(sel["key"], "kubernetes.io/metadata.name");
  EXPECT_EQ(sel["operator"], "In");
  EXPECT_EQ(sel["values"], json::array({"ppu-system", "monitoring"}));
  EXPECT_FALSE(scrape["from"][0].contains("podSelector"));

  json closed = build_network_policy(parse_job(job), {});
  EXPECT_EQ(closed["spec"]["ingress"].size(), 1u) << "no metrics namespaces: no scrape rule at all";
}

TEST(Security, NetworkPolicyIsCreatedBeforeAnyPodAndKeptInStep) {
  json job = make_job("demo", 2);
  Observed in = observed(job, {});
  in.service.reset();
  in.config_map.reset();
  in.network_policy.reset();
  Decision d = reconcile(in);
  int np_at = -1, first_pod = -1;
  for (size_t i = 0; i < d.actions.size(); ++i) {
    const auto* c = std::get_if<CreateObject>(&d.actions[i]);
    if (!c) continue;
    if (c->kind == ResourceKind::NetworkPolicy) np_at = static_cast<int>(i);
    if (c->kind == ResourceKind::Pod && first_pod < 0) first_pod = static_cast<int>(i);
  }
  ASSERT_GE(np_at, 0);
  EXPECT_LT(np_at, first_pod) << "a rank must never exist without its policy";

  // Drift (someone edited the policy, or metricsPort changed): merge-patched back.
  in = observed(job, {});
  in.network_policy->at("spec")["ingress"] = json::array();
  d = reconcile(in);
  ASSERT_EQ(count<PatchObject>(d, ResourceKind::NetworkPolicy), 1);
  for (const auto& patch : actions_of<PatchObject>(d)) EXPECT_EQ(patch.patch["spec"]["ingress"].size(), 1u);

  // Turned off (--network-policy=false): neither created nor patched.
  in = observed(job, {});
  in.network_policy.reset();
  in.options.network_policy = false;
  EXPECT_EQ(count<CreateObject>(reconcile(in), ResourceKind::NetworkPolicy), 0);
}

CreationRefusal quota_refusal() {
  return CreationRefusal{ResourceKind::Pod, "demo-rank-0", 403, "QuotaExceeded",
                         "pods \"demo-rank-0\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, "
                         "limited: pods=0"};
}

TEST(Security, RefusalBecomesConditionReasonAndOneWarningEvent) {
  json job = make_job("demo", 2, {{"phase", "Pending"}, {"restartCount", 0}, {"startTime", "2027-01-15T08:00:00Z"}});
  Observed in = observed(job, {});
  in.refusal = quota_refusal();
  Decision d = reconcile(in);
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  const auto c = condition_of(*st, kRefusedCondition);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["status"], "True");
  EXPECT_EQ((*c)["reason"], "QuotaExceeded");
  EXPECT_NE((*c)["message"].get<std::string>().find("exceeded quota: q"), std::string::npos) << *c;
  EXPECT_NE((*c)["message"].get<std::string>().find("demo-rank-0"), std::string::npos) << *c;
  EXPECT_EQ((*st)["reason"], "QuotaExceeded");
  EXPECT_EQ((*st)["message"], (*c)["message"]);
  EXPECT_EQ((*st)["phase"], "Pending");
  EXPECT_EQ((*st)["restartCount"], 0) << "a refusal does not count against backoffLimit";
  EXPECT_EQ(count_events(d, kRefusedCondition), 1);
  // The event precedes the creates: a refused create aborts the rest of the pass.
  ASSERT_GE(d.actions.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<UpdateStatus>(d.actions[0]));
  ASSERT_TRUE(std::holds_alternative<RecordEvent>(d.actions[1]));
  EXPECT_EQ(std::get<RecordEvent>(d.actions[1]).type, "Warning");
  EXPECT_EQ(count<CreateObject>(d, ResourceKind::Pod), 2) << "creation is retried";

  // Same refusal again: no status change, no second event (de-duplicated through the condition).
  job["status"] = *st;
  in = observed(job, {});
  in.refusal = quota_refusal();
  Decision again = reconcile(in);
  EXPECT_FALSE(new_status(again));
  EXPECT_EQ(count_events(again, kRefusedCondition), 0);
  EXPECT_EQ(count<CreateObject>(again, ResourceKind::Pod), 2);

  // A different refusal (the cause changed) is reported once more.
  in.refusal->reason = "PodSecurity";
  in.refusal->message = R"(pods "demo-rank-0" is forbidden: violates PodSecurity "restricted:latest": ...)";
  Decision other = reconcile(in);
  EXPECT_EQ(count_events(other, kRefusedCondition), 1);
  ASSERT_TRUE(new_status(other));
  EXPECT_EQ((*new_status(other))["reason"], "PodSecurity");

  // The cause is fixed: pods exist, the refusal is gone ⇒ condition False, reason cleared.
  in = observed(job, gang(job, 2, "Pending"));
  Decision fixed = reconcile(in);
  ASSERT_TRUE(new_status(fixed));
  const auto fc = condition_of(*new_status(fixed), kRefusedCondition);
  ASSERT_TRUE(fc);
  EXPECT_EQ((*fc)["status"], "False");
  EXPECT_EQ((*fc)["reason"], "Created");
  EXPECT_FALSE(new_status(fixed)->contains("reason"));
  EXPECT_FALSE(new_status(fixed)->contains("message"));
  EXPECT_EQ(count_events(fixed, "Created"), 1);
}

TEST(Security, SuspendingARefusedJobClearsTheCondition) {
  json job = make_job("demo", 2, {{"phase", "Pending"}, {"restartCount", 0}});
  Observed in = observed(job, {});
  in.refusal = quota_refusal();
  Decision refused = reconcile(in);
  ASSERT_TRUE(new_status(refused));
  job["status"] = *new_status(refused);
  job["spec"]["runPolicy"]["suspend"] = true;
  in = observed(job, {});
  in.refusal = quota_refusal();
  Decision d = reconcile(in);
  ASSERT_TRUE(new_status(d));
  EXPECT_EQ((*new_status(d))["phase"], "Suspended");
  const auto c = condition_of(*new_status(d), kRefusedCondition);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["status"], "False");
  EXPECT_FALSE(new_status(d)->contains("reason"));
}

Response api_error(long code, const std::string& reason, const std::string& message) {
  Response r;
  r.status = code;
  r.body = {{"kind", "Status"}, {"status", "Failure"}, {"reason", reason}, {"message", message}, {"code", code}};
  r.error = message;
  return r;
}

TEST(Security, ApiRefusalsAreClassified) {
  auto reason = [](const Response& r) {
    auto rf = as_refusal(ResourceKind::Pod, "p", r);
    return rf ? rf->reason : std::string("<transient>");
  };
  EXPECT_EQ(reason(api_error(403, "Forbidden", "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1")),
            "QuotaExceeded");
  EXPECT_EQ(reason(api_error(403, "Forbidden", "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\"")),
            "PodSecurity");
  EXPECT_EQ(reason(api_error(403, "Forbidden", "admission webhook \"deny.example.com\" denied the request")),
            "AdmissionWebhook");
  EXPECT_EQ(reason(api_error(500, "InternalError", "Internal error occurred: failed calling webhook \"x\"")),
            "AdmissionWebhook");
  EXPECT_EQ(reason(api_error(403, "Forbidden", "pods is forbidden: User \"x\" cannot create resource \"pods\"")),
            "Forbidden");
  EXPECT_EQ(reason(api_error(422, "Invalid", "Pod \"p\" is invalid: spec.containers[0].image: Required value")),
            "Invalid");
  EXPECT_EQ(reason(api_error(409, "AlreadyExists", "exists")), "<transient>");
  EXPECT_EQ(reason(api_error(429, "TooManyRequests", "slow down")), "<transient>");
  EXPECT_EQ(reason(api_error(500, "InternalError", "etcd timeout")), "<transient>");
  EXPECT_EQ(reason(Response{}), "<transient>") << "no response at all";
  auto rf = as_refusal(ResourceKind::Pod, "p", api_error(422, "Invalid", "bad"));
  ASSERT_TRUE(rf);
  EXPECT_EQ(rf->code, 422);
  EXPECT_EQ(rf->message, "bad");
  EXPECT_EQ(rf->name, "p");
}

TEST(Security, FlagsForMetricsAuthAndNetworkPolicy) {
  Flags f = parse_flags({});
  EXPECT_EQ(f.metrics_auth, "none");
  EXPECT_TRUE(f.network_policy);
  EXPECT_TRUE(f.metrics_namespaces.empty());
  f = parse_flags({"--metrics-auth=token", "--network-policy=false", "--metrics-namespaces", "ppu-system,,monitoring"});
  EXPECT_EQ(f.metrics_auth, "token");
  EXPECT_FALSE(f.network_policy);
  EXPECT_EQ(f.metrics_namespaces, (std::vector<std::string>{"ppu-system", "monitoring"}));
  auto error_of = [](const std::vector<std::string>& a) {
    try {
      parse_flags(a);
    } catch (const FlagError& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  EXPECT_NE(error_of({"--metrics-auth=basic"}).find("--metrics-auth"), std::string::npos);
  EXPECT_NE(error_of({"--network-policy=maybe"}).find("--network-policy"), std::string::npos);
  EXPECT_NE(error_of({"--metrics-namespaces=Bad_NS"}).find("--metrics-namespaces: 'Bad_NS'"), std::string::npos);
}

}  // namespace
}  // namespace ppu::op
