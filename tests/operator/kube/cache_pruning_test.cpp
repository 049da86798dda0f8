// Unit tests of what the pod and node caches keep (operator/src/kube/cache_pruning.h): a pruned
// pod answers every question the controller asks of a pod exactly as the full object does (the
// node it is bound to included), a pruned node its health, and both are much smaller.
#include <gtest/gtest.h>

#include "kube/cache_pruning.h"
#include "reconcile/job_spec.h"
#include "reconcile/job_status.h"
#include "reconcile/node_health.h"
#include "reconcile/object_builder.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

json with_status(json pod, const json& status) {
  pod["metadata"]["uid"] = "u-1";
  pod["metadata"]["resourceVersion"] = "42";
  pod["status"] = status;
  return pod;
}

TEST(CachePruning, PrunedPodAnswersLikeTheFullOne) {
  const json built = testing::rank_pod(parse_job(testing::make_job("demo", 4)), 1, 0);
  const json statuses[] = {
      {{"phase", "Pending"}},
      {{"phase", "Running"},
       {"podIP", "10.0.0.7"},
       {"hostIP", "192.168.1.2"},
       {"qosClass", "Burstable"},
       {"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
       {"containerStatuses",
        {{{"name", "ppu"},
          {"image", "ppu:test"},
          {"imageID", "sha256:abc"},
          {"ready", true},
          {"state", {{"running", {{"startedAt", "2026-11-23T00:00:00Z"}}}}}}}}},
      {{"phase", "Failed"},
       {"containerStatuses",
        {{{"name", "ppu"},
          {"image", "ppu:test"},
          {"state", {{"terminated", {{"exitCode", 4}, {"message", "no data at /data"}, {"reason", "Error"}}}}}}}}},
      {{"phase", "Failed"}, {"reason", "Evicted"}, {"message", "node out of memory"}},
  };
  for (const json& st : statuses) {
    json full = with_status(built, st);
    full["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:01Z";
    json pruned = full;
    prune_pod(pruned);
    SCOPED_TRACE(st.dump());
    EXPECT_FALSE(pruned.contains("spec"));
    EXPECT_EQ(pruned["metadata"], full["metadata"]);  // labels, owner, uid, deletion stay
    EXPECT_EQ(pod_phase(pruned), pod_phase(full));
    EXPECT_EQ(pod_ready(pruned), pod_ready(full));
    EXPECT_EQ(pod_terminating(pruned), pod_terminating(full));
    EXPECT_EQ(failure_reason(pruned), failure_reason(full));
    auto a = fatal_exit(pruned), b = fatal_exit(full);
    ASSERT_EQ(a.has_value(), b.has_value());
    if (a) {
      EXPECT_EQ(a->exit_code, b->exit_code);
      EXPECT_EQ(a->message, b->message);
    }
    EXPECT_EQ(pruned["status"].value("podIP", ""), full["status"].value("podIP", ""));
  }
}

TEST(CachePruning, APodKeepsTheNodeItIsBoundToAndNothingElseOfItsSpec) {
  json full = with_status(testing::rank_pod(parse_job(testing::make_job("demo", 4)), 1, 0), {{"phase", "Running"}});
  full["spec"]["nodeName"] = "node-7";
  json pruned = full;
  prune_pod(pruned);
  EXPECT_EQ(pruned["spec"], json({{"nodeName", "node-7"}}));
  EXPECT_EQ(node_name(pruned), "node-7");
}

TEST(CachePruning, ANodeKeepsItsNameAndReadyConditionOnly) {
  json full = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", "node-7"},
        {"uid", "n-1"},
        {"resourceVersion", "9"},
        {"labels", {{"kubernetes.io/hostname", "node-7"}}},
        {"annotations", {{"a", std::string(500, 'x')}}}}},
      {"spec", {{"podCIDR", "10.0.0.0/24"}, {"taints", json::array({{{"key", "k"}}})}}},
      {"status",
       {{"conditions", json::array({{{"type", "MemoryPressure"}, {"status", "False"}},
                                    {{"type", "Ready"}, {"status", "Unknown"}, {"reason", "NodeStatusUnknown"}}})},
        {"images", json::array({{{"names", json::array({std::string(200, 'i')})}}})},
        {"addresses", json::array({{{"type", "InternalIP"}, {"address", "10.1.1.1"}}})}}}};
  json pruned = full;
  prune_node(pruned);
  EXPECT_EQ(pruned["metadata"], json({{"name", "node-7"}, {"uid", "n-1"}, {"resourceVersion", "9"}}));
  EXPECT_FALSE(pruned.contains("spec"));
  EXPECT_EQ(pruned["status"]["conditions"].size(), 1u);
  EXPECT_EQ(node_health(&pruned), node_health(&full));
  EXPECT_EQ(node_health(&pruned), NodeHealth::Unreachable);
  EXPECT_LT(pruned.dump().size() * 3, full.dump().size());
}

TEST(CachePruning, RankPodShrinksToAFractionOfItsSize) {
  json full = with_status(testing::rank_pod(parse_job(testing::make_job("demo", 32)), 31, 3), {{"phase", "Running"}});
  json pruned = full;
  prune_pod(pruned);
  EXPECT_LT(pruned.dump().size() * 2, full.dump().size());
}

}  // namespace
}  // namespace ppu::op
