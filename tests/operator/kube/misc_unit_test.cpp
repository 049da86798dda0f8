// Unit tests of kube/ basics: kubeconfig loading, timestamps and the resource table (with the
// objects the builders make).
#include <gtest/gtest.h>

#include <fstream>

#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/rfc3339.h"
#include "reconcile/export_job.h"
#include "reconcile/object_builder.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

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
      {ResourceKind::Pod, testing::rank_pod(j, 0, 0)},
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
  EXPECT_EQ(resource(ResourceKind::PPUJob).api_version(), "ppu.dev/v1alpha1");
  EXPECT_EQ(resource(ResourceKind::PPUJob).kind, std::string("PPUJob"));
  EXPECT_EQ(resource(ResourceKind::Job).api_version(), "batch/v1");
  EXPECT_FALSE(resource(ResourceKind::SubjectAccessReview).namespaced);
}

}  // namespace
}  // namespace ppu::op
