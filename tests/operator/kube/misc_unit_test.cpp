// Unit tests of flags, kubeconfig loading, timestamps and the resource table.
#include <gtest/gtest.h>

#include <fstream>

#include "export_job.h"
#include "flags.h"
#include "kube_client.h"
#include "kubeconfig.h"
#include "object_builder.h"
#include "rfc3339.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

TEST(Flags, ParsesAllFlags) {
  Flags f = parse_flags({"--kubeconfig", "/k", "--namespace=ml", "--metrics-addr", ":9090", "--health-addr=:9091",
                         "--leader-elect", "--scrape-interval", "500ms", "--workers", "8", "--restart-backoff=2s"});
  EXPECT_EQ(f.kubeconfig, "/k");
  EXPECT_EQ(f.ns, "ml");
  EXPECT_EQ(f.metrics_addr, ":9090");
  EXPECT_EQ(f.health_addr, ":9091");
  EXPECT_TRUE(f.leader_elect);
  EXPECT_DOUBLE_EQ(f.scrape_interval_s, 0.5);
  EXPECT_EQ(f.workers, 8);
  EXPECT_DOUBLE_EQ(f.restart_backoff_s, 2);
}

TEST(Flags, ErrorsNameTheFlag) {
  auto message = [](std::vector<std::string> args) {
    try {
      parse_flags(args);
    } catch (const FlagError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--scrape-interval", "soon"}).find("--scrape-interval"), std::string::npos);
  EXPECT_NE(message({"--workers", "0"}).find("--workers"), std::string::npos);
  EXPECT_NE(message({"--bogus"}).find("--bogus"), std::string::npos);
  EXPECT_NE(message({"--kubeconfig"}).find("--kubeconfig"), std::string::npos);
  EXPECT_TRUE(parse_flags({"--help"}).help);
  EXPECT_TRUE(parse_flags({"-h"}).help);
  EXPECT_EQ(message({"positional"}), "unknown flag 'positional' (see --help)");
  EXPECT_EQ(message({"--workers", "0"}), "--workers: '0' is not an integer in 1..256");
  EXPECT_EQ(message({"--restart-backoff=3x"}), "--restart-backoff: '3x' has unknown unit 'x' (use ms, s, m or h)");
  EXPECT_EQ(message({"--leader-elect=1"}), "--leader-elect: '1' is not true or false");
  EXPECT_EQ(message({"--network-policy="}), "--network-policy: '' is not true or false");
}

TEST(Flags, DefaultsRepeatsAndEmptyValues) {
  const Flags d = parse_flags({});
  EXPECT_EQ(d.metrics_addr, ":8080");
  EXPECT_EQ(d.health_addr, ":8081");
  EXPECT_FALSE(d.leader_elect);
  EXPECT_DOUBLE_EQ(d.scrape_interval_s, 15);
  EXPECT_EQ(d.workers, 4);
  EXPECT_DOUBLE_EQ(d.restart_backoff_s, 10);
  EXPECT_DOUBLE_EQ(d.restart_backoff_max_s, 300);
  EXPECT_EQ(d.log_level, "info");
  EXPECT_FALSE(d.help);
  // The last of a repeated flag counts; "--flag=" is an empty value (all namespaces here).
  const Flags f = parse_flags({"--workers", "2", "--workers=3", "--namespace", "a", "--namespace=", "--leader-elect",
                               "--leader-elect=false", "--restart-backoff-max", "2h"});
  EXPECT_EQ(f.workers, 3);
  EXPECT_EQ(f.ns, "");
  EXPECT_FALSE(f.leader_elect);
  EXPECT_DOUBLE_EQ(f.restart_backoff_max_s, 7200);
}

TEST(Flags, UsageListsEveryFlagWithItsValue) {
  const std::string text = usage();
  EXPECT_EQ(text.rfind("ppu-operator: the PPUJob controller", 0), 0u) << text;
  for (const char* line : {"\n  --kubeconfig FILE           kubeconfig to use", "\n  --network-policy BOOL       ",
                           "\n  --leader-elect              hold", "\n  --leader-elect-namespace NS namespace",
                           "\n  --workers N                 concurrent reconciles (default 4)\n",
                           "\n                              server authenticates (TokenReview)",
                           "\n  --help                      this text\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(Rfc3339, RoundTrips) {
  EXPECT_EQ(format_rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(*parse_rfc3339("2026-11-22T03:59:10Z"),
            *parse_rfc3339(format_rfc3339(*parse_rfc3339("2026-11-22T03:59:10Z"))));
  EXPECT_EQ(*parse_rfc3339("2026-11-22T03:59:10.123456Z"), *parse_rfc3339("2026-11-22T03:59:10Z"));
  EXPECT_FALSE(parse_rfc3339("yesterday").has_value());
}

TEST(Kubeconfig, LoadsEmbeddedCredentialsAndTheContextNamespace) {
  std::string path = ::testing::TempDir() + "/kc.yaml";
  std::ofstream(path) << R"(apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster: {server: "https://127.0.0.1:6443/", certificate-authority-data: "Q0EtUEVN"}
users:
- name: u
  user: {client-certificate-data: "Q0VSVA==", client-key-data: "S0VZ", token: "t0k"}
contexts:
- name: c
  context: {cluster: k, user: u, namespace: ml}
)";
  RestConfig rc = load_kubeconfig(path);
  EXPECT_EQ(rc.server, "https://127.0.0.1:6443");
  EXPECT_EQ(rc.ca_pem, "CA-PEM");
  EXPECT_EQ(rc.client_cert_pem, "CERT");
  EXPECT_EQ(rc.client_key_pem, "KEY");
  EXPECT_EQ(rc.token, "t0k");
  EXPECT_EQ(rc.ns, "ml");
  EXPECT_THROW(load_kubeconfig(path, "missing"), ConfigError);
}

TEST(Resource, Paths) {
  EXPECT_EQ(resource(ResourceKind::Pod).path("ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(resource(ResourceKind::PPUJob).path(""), "/apis/ppu.dev/v1alpha1/ppujobs");
  EXPECT_EQ(resource(ResourceKind::Lease).path("kube-system", "l"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l");
  EXPECT_EQ(resource(ResourceKind::TokenReview).path("ignored"), "/apis/authentication.k8s.io/v1/tokenreviews");
  EXPECT_EQ(url_escape("ppu.dev/job=a b"), "ppu.dev%2Fjob%3Da%20b");
}

// The objects the operator builds say, in apiVersion and kind, what the table says of their kind.
TEST(Resource, TheTableMatchesTheObjectsBuilt) {
  const JobSpec j = parse_job(testing::make_job());
  const std::pair<ResourceKind, json> built[] = {
      {ResourceKind::Pod, build_pod(j, 0, 0)},
      {ResourceKind::Service, build_service(j)},
      {ResourceKind::ConfigMap, build_config_map(j)},
      {ResourceKind::NetworkPolicy, build_network_policy(j, {})},
      {ResourceKind::Job, build_export_job(parse_job(testing::with_export(testing::make_job())))},
      {ResourceKind::NetworkPolicy, build_export_network_policy(j)},
  };
  for (const auto& [kind, obj] : built) {
    EXPECT_EQ(obj["apiVersion"], resource(kind).api_version()) << obj["kind"];
    EXPECT_EQ(obj["kind"], resource(kind).kind);
  }
  EXPECT_EQ(resource(ResourceKind::PPUJob).api_version(), kApiVersion);
  EXPECT_EQ(resource(ResourceKind::PPUJob).kind, std::string(kKind));
  EXPECT_EQ(resource(ResourceKind::Job).api_version(), "batch/v1");
  EXPECT_FALSE(resource(ResourceKind::SubjectAccessReview).namespaced);
}

}  // namespace
}  // namespace ppu::op
