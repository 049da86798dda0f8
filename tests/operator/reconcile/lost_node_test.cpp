// Unit tests of a live job's rank pod stuck terminating on a lost node
// (operator/src/reconcile/node_health.h and its use in policy_recovery.cpp): the node's health
// from its Ready condition; force deletion (grace period 0, uid precondition) only for a
// terminating pod past its grace period whose node is NotReady, unreachable or gone, never on a
// Ready node, never an unbound or running pod, never with the option off, never for a running
// gang job's pod; the loss counted once with an event naming the node; the replacement created
// once the name is free, while the other ranks are replaced without waiting for it; a gang
// restart, of a live job or of a gang job, force-deletes its old pods (a live store's too) stuck
// on a lost node, announced once.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "reconcile/job_constants.h"
#include "reconcile/node_health.h"
#include "reconcile/reconciler.h"
#include "reconcile/rendezvous.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::at;
using testing::count;
using testing::count_events;
using testing::created_pods;
using testing::event_reasons;
using testing::gang;
using testing::has_event;
using testing::kNow;
using testing::make_job;
using testing::make_pod;
using testing::new_status;
using testing::observed;
using testing::observed_live;
using testing::running_status;
using testing::status_after;

// A Node whose Ready condition has `ready` ("True", "False", "Unknown"; "" for no condition).
json node(const std::string& name, const std::string& ready) {
  json n = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}, {"status", json::object()}};
  n["status"]["conditions"] = json::array({{{"type", "MemoryPressure"}, {"status", "False"}}});
  if (!ready.empty())
    n["status"]["conditions"].push_back(
        {{"type", "Ready"}, {"status", ready}, {"lastTransitionTime", at(-60)}, {"reason", "NodeStatusUnknown"}});
  return n;
}

// `pod` bound to `node_name`, deleted with its grace period ending `grace_end` s from now.
json stuck(json pod, const std::string& node_name, int64_t grace_end = -5) {
  pod["spec"]["nodeName"] = node_name;
  pod["metadata"]["deletionTimestamp"] = at(grace_end);
  return pod;
}

json live_job(json status = running_status(0)) {
  json job = make_job("demo", 4, std::move(status));
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  return job;
}

std::vector<DeleteObject> force_deletions(const Decision& d) {
  std::vector<DeleteObject> out;
  for (const auto& a : actions_of<DeleteObject>(d, ResourceKind::Pod))
    if (a.grace_period_seconds == 0) out.push_back(a);
  return out;
}

std::string event_message(const Decision& d, const std::string& reason) {
  for (const auto& e : actions_of<RecordEvent>(d))
    if (e.reason == reason) return e.message;
  return "";
}

// ---- the rule ----

TEST(NodeHealth, ComesFromTheReadyCondition) {
  const json ready = node("n", "True"), not_ready = node("n", "False"), unknown = node("n", "Unknown"),
             silent = node("n", "");
  EXPECT_EQ(node_health(&ready), NodeHealth::Ready);
  EXPECT_EQ(node_health(&not_ready), NodeHealth::NotReady);
  EXPECT_EQ(node_health(&unknown), NodeHealth::Unreachable);
  EXPECT_EQ(node_health(&silent), NodeHealth::Unreachable) << "no Ready condition: nothing vouches for the kubelet";
  EXPECT_EQ(node_health(nullptr), NodeHealth::Gone);
  EXPECT_STREQ(to_string(NodeHealth::Unreachable), "Unknown");
}

struct StuckRow {
  std::string name;
  bool terminating;
  std::string node_name;  // spec.nodeName ("" unbound)
  std::string ready;      // the node's Ready status; "gone": no Node
  int64_t grace_end;      // deletionTimestamp - now
  bool force;
  int64_t wait;
};
std::ostream& operator<<(std::ostream& os, const StuckRow& r) { return os << r.name; }

class StuckOnLostNode : public ::testing::TestWithParam<StuckRow> {};

TEST_P(StuckOnLostNode, ForceDeletesOnlyPastTheGracePeriodOnALostNode) {
  const StuckRow& row = GetParam();
  json pod = make_pod(live_job(), 1, "Running");
  if (!row.node_name.empty()) pod["spec"]["nodeName"] = row.node_name;
  if (row.terminating) pod["metadata"]["deletionTimestamp"] = at(row.grace_end);
  std::map<std::string, json> nodes;
  if (row.ready != "gone") nodes["n1"] = node("n1", row.ready);
  const StuckPod s = stuck_on_lost_node(pod, nodes, kNow);
  EXPECT_EQ(s.force_delete, row.force);
  EXPECT_EQ(s.wait_s, row.wait);
}

INSTANTIATE_TEST_SUITE_P(LostNodeRule, StuckOnLostNode,
                         ::testing::Values(StuckRow{"NotReady", true, "n1", "False", -5, true, -1},
                                           StuckRow{"Unknown", true, "n1", "Unknown", -5, true, -1},
                                           StuckRow{"NoReadyCondition", true, "n1", "", -5, true, -1},
                                           StuckRow{"NodeGone", true, "n1", "gone", -5, true, -1},
                                           StuckRow{"GraceJustOver", true, "n1", "False", 0, true, -1},
                                           StuckRow{"ReadyNodeNever", true, "n1", "True", -500, false, -1},
                                           StuckRow{"WithinItsGracePeriod", true, "n1", "Unknown", 20, false, 20},
                                           StuckRow{"NotTerminating", false, "n1", "Unknown", 0, false, -1},
                                           StuckRow{"Unbound", true, "", "Unknown", -5, false, -1}),
                         [](const ::testing::TestParamInfo<StuckRow>& i) { return i.param.name; });

// ---- in reconcile ----

class LostNode : public ::testing::TestWithParam<std::string> {};  // the node's Ready status, or "gone"

TEST_P(LostNode, AStuckRankPodIsForceDeletedCountedOnceAndReplaced) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[2] = stuck(pods[2], "n7");
  Observed in = observed_live(job, pods);
  if (GetParam() != "gone") in.nodes["n7"] = node("n7", GetParam());

  Decision d = reconcile(in);
  const auto forced = force_deletions(d);
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_EQ(forced[0].name, "demo-rank-2");
  EXPECT_EQ(forced[0].uid, "pod-2") << "exactly the pod seen (uid precondition)";
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 1) << "nothing else is deleted";
  EXPECT_TRUE(created_pods(d).empty()) << "the old pod is still in the cache: its name is not free yet";
  EXPECT_FALSE(d.gang_restart);
  EXPECT_EQ(d.force_deletions, 1);
  EXPECT_EQ(event_reasons(d), (std::vector<std::string>{reason::kRankRecovery, reason::kPodForceDeleted}));
  const std::string msg = event_message(d, reason::kPodForceDeleted);
  EXPECT_NE(msg.find("node n7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("force-deleted"), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam() == "gone"    ? "no longer exists"
                     : GetParam() == "False" ? "NotReady"
                                             : "Unknown"),
            std::string::npos)
      << msg;
  json st = *new_status(d);
  EXPECT_EQ(st["phase"], phase::kRunning);
  EXPECT_EQ(st["recoveries"], 1);
  EXPECT_EQ(st["recoveringRanks"],
            json::array(
                {{{"rank", 2}, {"podUID", "pod-2"}, {"lostTime", at(0)}, {"attempt", 1}, {"forceDeletedFrom", "n7"}}}));

  // The cache still shows it: deleted again (404 is success), neither counted nor announced again.
  in.job["status"] = st;
  Decision again = reconcile(in);
  EXPECT_EQ(force_deletions(again).size(), 1u);
  EXPECT_TRUE(event_reasons(again).empty());
  EXPECT_EQ(again.force_deletions, 0);
  EXPECT_EQ(status_after(in, again)["recoveries"], 1);

  // Gone: the replacement is created under the same name, still one recovery.
  in.pods.erase(in.pods.begin() + 2);
  Decision create = reconcile(in);
  EXPECT_EQ(created_pods(create), std::vector<std::string>{"demo-rank-2"});
  EXPECT_TRUE(force_deletions(create).empty());
  EXPECT_EQ(status_after(in, create)["recoveries"], 1);
}

INSTANTIATE_TEST_SUITE_P(Node, LostNode, ::testing::Values("False", "Unknown", "gone"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "False" ? std::string("NotReady") : i.param == "gone" ? "Gone" : i.param;
                         });

TEST(LostNode, APodOnAReadyNodeIsWaitedFor) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[2] = stuck(pods[2], "n1", -600);  // long past its grace period, but its kubelet is alive
  Observed in = observed_live(job, pods);
  in.nodes["n1"] = node("n1", "True");
  Decision d = reconcile(in);
  EXPECT_TRUE(force_deletions(d).empty());
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 0);
  EXPECT_TRUE(created_pods(d).empty());
  EXPECT_TRUE(event_reasons(d).empty());
  EXPECT_EQ(status_after(in, d)["recoveries"], 0);
}

TEST(LostNode, ThePodsGracePeriodRunsOutFirst) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[1] = stuck(pods[1], "n1", 25);
  Observed in = observed_live(job, pods);
  in.nodes["n1"] = node("n1", "Unknown");
  Decision d = reconcile(in);
  EXPECT_TRUE(force_deletions(d).empty());
  EXPECT_DOUBLE_EQ(d.requeue_after_s, 25) << "the pass comes back when the grace period ends";
  in.now = kNow + 25;
  EXPECT_EQ(force_deletions(reconcile(in)).size(), 1u);
}

TEST(LostNode, NeverWithTheOptionOffNorForAGangJob) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[3] = stuck(pods[3], "n1");
  Observed off = observed_live(job, pods);
  off.options.force_delete_on_lost_node = false;
  EXPECT_TRUE(force_deletions(reconcile(off)).empty()) << "--force-delete-on-lost-node=false waits";

  json gang_job = make_job("demo", 4, running_status(0));
  std::vector<json> gang_pods = gang(gang_job, 4, "Running");
  gang_pods[3] = stuck(gang_pods[3], "n1");
  Observed g = observed(gang_job, gang_pods);
  EXPECT_TRUE(force_deletions(reconcile(g)).empty())
      << "recovery gang, Running: a lost pod makes a gang restart first (AGangJobsRestartForceDeletes...)";
}

TEST(LostNode, APodCountedBeforeIsForceDeletedWithoutCountingItAgain) {
  // Rank 1's pod was lost (phase Unknown) and deleted by the operator: counted then. Its node
  // never answers, so it stays Terminating.
  json st = running_status(0);
  st["recoveries"] = 1;
  st["recoveringRanks"] = json::array({{{"rank", 1}, {"podUID", "pod-1"}, {"lostTime", at(-400)}, {"attempt", 1}}});
  st["recentRecoveries"] = json::array({{{"rank", 1}, {"time", at(-400)}}});
  json job = live_job(st);
  std::vector<json> pods = gang(job, 4, "Running");
  pods[1]["status"]["phase"] = "Unknown";
  pods[1] = stuck(pods[1], "n2", -370);
  Observed in = observed_live(job, pods);
  in.nodes["n2"] = node("n2", "Unknown");
  Decision d = reconcile(in);
  EXPECT_EQ(force_deletions(d).size(), 1u);
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{reason::kPodForceDeleted});
  EXPECT_EQ(d.force_deletions, 1);
  const json after = *new_status(d);
  EXPECT_EQ(after["recoveries"], 1);
  EXPECT_EQ(after["recoveringRanks"][0]["forceDeletedFrom"], "n2");
  EXPECT_EQ(after["recoveringRanks"][0]["lostTime"], at(-400)) << "the loss keeps its time";
}

TEST(LostNode, OtherRanksAreReplacedWithoutWaitingForAStuckName) {
  // Rank 1 terminates (slowly, on a Ready node); rank 3 vanished: a running live job replaces
  // rank 3 now. A gang job would wait for every name.
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[1] = stuck(pods[1], "n1", 20);
  pods.pop_back();
  Observed in = observed_live(job, pods);
  in.nodes["n1"] = node("n1", "True");
  Decision d = reconcile(in);
  EXPECT_EQ(created_pods(d), std::vector<std::string>{"demo-rank-3"});
  EXPECT_EQ(count_events(d, reason::kRankRecovery), 1);

  json pending = live_job({{"phase", phase::kPending}, {"restartCount", 0}, {"startTime", at(-5)}});
  std::vector<json> new_pods = gang(pending, 4, "Pending");
  new_pods[1] = stuck(new_pods[1], "n1", 20);
  new_pods.pop_back();
  Observed before_running = observed_live(pending, new_pods);
  before_running.rendezvous_pod->at("status")["phase"] = "Pending";
  EXPECT_TRUE(created_pods(reconcile(before_running)).empty()) << "before it ran, the gang is created whole";
}

TEST(LostNode, AStuckPodIsForceDeletedEvenWhenItsLossSpendsTheBudget) {
  json st = running_status(0);
  st["recoveries"] = 10;
  st["recentRecoveries"] = json::array();
  for (int i = 0; i < 10; ++i) st["recentRecoveries"].push_back({{"rank", 0}, {"time", at(-1100 + 100 * i)}});
  json job = live_job(st);
  std::vector<json> pods = gang(job, 4, "Running");
  pods[2] = stuck(pods[2], "n3");
  Observed in = observed_live(job, pods);
  Decision d = reconcile(in);  // n3 has no Node object
  EXPECT_EQ((*new_status(d))["phase"], phase::kRestarting) << "the budget spent: a gang restart";
  EXPECT_TRUE(has_event(d, reason::kRecoveryLimitExceeded));
  EXPECT_EQ(force_deletions(d).size(), 1u) << "its name and its node's resources are released all the same";
  EXPECT_TRUE(has_event(d, reason::kPodForceDeleted));
}

// The status of a job whose gang restart (the first) is due now, after `why`.
json restarting_after(const std::string& why) {
  return {{"phase", phase::kRestarting},
          {"restartCount", 1},
          {"startTime", at(-300)},
          {"nextRestartTime", at(-1)},
          {"conditions", json::array({{{"type", condition::kRestarting},
                                       {"status", "True"},
                                       {"reason", reason::kGangRestart},
                                       {"message", why},
                                       {"lastTransitionTime", at(-60)}}})}};
}

TEST(LostNode, ALiveGangRestartForceDeletesItsOldPodsStuckOnALostNodeOnce) {
  // The store's node was lost: the ranks exited 3 and the gang restarts; the old store pod stays
  // Terminating on its node, and a rank pod on a Ready node is still finishing.
  json st = restarting_after("rendezvous pod demo-rendezvous failed (NodeLost)");
  json job = live_job(st);
  Observed in = observed_live(job, {stuck(make_pod(job, 0, "Running"), "n1", 10)});
  in.rendezvous_pod = stuck(*in.rendezvous_pod, "n9", -30);
  in.nodes["n1"] = node("n1", "True");
  in.nodes["n9"] = node("n9", "Unknown");

  Decision d = reconcile(in);
  const auto forced = force_deletions(d);
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_EQ(forced[0].name, "demo-rendezvous");
  EXPECT_EQ(forced[0].uid, "store-1");
  EXPECT_TRUE(created_pods(d).empty()) << "rank 0 is still terminating";
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{reason::kPodForceDeleted});
  EXPECT_NE(event_message(d, reason::kPodForceDeleted).find("node n9, which is Unknown"), std::string::npos);
  EXPECT_EQ(d.force_deletions, 1);
  const json after = *new_status(d);
  const std::string msg = testing::condition_of(after, condition::kRestarting)->at("message");
  EXPECT_NE(msg.find("force-deleted pod demo-rendezvous from node n9"), std::string::npos) << msg;

  in.job["status"] = after;  // the cache still shows it: deleted again, not announced again
  Decision again = reconcile(in);
  EXPECT_EQ(force_deletions(again).size(), 1u);
  EXPECT_TRUE(event_reasons(again).empty());
  EXPECT_EQ(again.force_deletions, 0);

  // Once both are gone the new gang is created, store first.
  in.rendezvous_pod.reset();
  in.pods.clear();
  EXPECT_EQ(created_pods(reconcile(in)),
            (std::vector<std::string>{"demo-rendezvous", "demo-rank-0", "demo-rank-1", "demo-rank-2", "demo-rank-3"}));
}

TEST(LostNode, AGangJobsRestartForceDeletesItsOldPodsStuckOnALostNode) {
  // recovery gang: node n9 was lost with ranks 2 and 3; the gang restarts on the surviving node.
  // Ranks 0 and 1 (node n1, Ready) are finishing; 2 and 3 stay Terminating on n9 for ever.
  json st = restarting_after("rank 2 failed (NodeLost)");
  json job = make_job("demo", 4, st);
  std::vector<json> pods = {stuck(make_pod(job, 0, "Running"), "n1", 10), stuck(make_pod(job, 1, "Running"), "n1", 10),
                            stuck(make_pod(job, 2, "Running"), "n9", -30),
                            stuck(make_pod(job, 3, "Running"), "n9", -30)};
  Observed in = observed(job, pods);
  in.nodes["n1"] = node("n1", "True");
  in.nodes["n9"] = node("n9", "Unknown");

  Decision d = reconcile(in);
  std::vector<std::string> forced;
  for (const auto& f : force_deletions(d)) forced.push_back(f.name);
  EXPECT_EQ(forced, (std::vector<std::string>{"demo-rank-2", "demo-rank-3"})) << "never the pods on the Ready node";
  EXPECT_TRUE(created_pods(d).empty()) << "ranks 0 and 1 are still terminating";
  EXPECT_EQ(d.force_deletions, 2);
  EXPECT_EQ(event_reasons(d), (std::vector<std::string>{reason::kPodForceDeleted, reason::kPodForceDeleted}));

  // Once every old pod is gone the new gang is created whole (no store: recovery gang).
  in.job["status"] = *new_status(d);
  in.pods.clear();
  EXPECT_EQ(created_pods(reconcile(in)),
            (std::vector<std::string>{"demo-rank-0", "demo-rank-1", "demo-rank-2", "demo-rank-3"}));

  // With the option off it waits for them.
  in.pods = pods;
  in.options.force_delete_on_lost_node = false;
  EXPECT_TRUE(force_deletions(reconcile(in)).empty());
}

}  // namespace
}  // namespace ppu::op
