// Unit tests of flags, kubeconfig loading, timestamps and resource paths.
#include <gtest/gtest.h>

#include <fstream>

#include "flags.h"
#include "kube_client.h"
#include "kubeconfig.h"
#include "rfc3339.h"

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
  EXPECT_EQ(resources::pods.path("ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(resources::ppujobs.path(""), "/apis/ppu.dev/v1alpha1/ppujobs");
  EXPECT_EQ(resources::leases.path("kube-system", "l"), "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l");
  EXPECT_EQ(url_escape("ppu.dev/job=a b"), "ppu.dev%2Fjob%3Da%20b");
}

}  // namespace
}  // namespace ppu::op
