// Unit tests of what the pod cache keeps (operator/src/kube/cache_pruning.h): a pruned pod
// answers every question the controller asks of a pod exactly as the full object does, and is
// much smaller.
#include <gtest/gtest.h>

#include "kube/cache_pruning.h"
#include "reconcile/job_spec.h"
#include "reconcile/job_status.h"
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
  const json built = build_pod(parse_job(testing::make_job("demo", 4)), 1, 0);
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

TEST(CachePruning, RankPodShrinksToAFractionOfItsSize) {
  json full = with_status(build_pod(parse_job(testing::make_job("demo", 32)), 31, 3), {{"phase", "Running"}});
  json pruned = full;
  prune_pod(pruned);
  EXPECT_LT(pruned.dump().size() * 2, full.dump().size());
}

}  // namespace
}  // namespace ppu::op
