// Unit tests of live recovery (training.network.recovery live; operator/src/reconcile/
// policy_recovery.cpp, rendezvous.h and the live cases of policy_restart.cpp): the rendezvous
// store's pod and Service and the ranks' external-store environment; a rank lost for any reason
// but exit codes 2, 3 and 4 is recreated alone and counted once in status.recoveries whatever the
// caches show; exit 3 and a lost store restart the gang (store included); maxRecoveries; the
// Degraded condition and the live-group figures; a gang job is unchanged. The window budget and
// the back-off: recovery_pacing_test.cpp; a pod stuck on a lost node: lost_node_test.cpp.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "core/job_contract.h"
#include "metrics/job_metrics.h"
#include "reconcile/job_constants.h"
#include "reconcile/reconciler.h"
#include "reconcile/rendezvous.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::actions_of;
using testing::at;
using testing::condition_of;
using testing::count;
using testing::count_events;
using testing::created_pods;
using testing::deleted_pods;
using testing::event_reasons;
using testing::gang;
using testing::make_job;
using testing::make_pod;
using testing::new_status;
using testing::observed;
using testing::observed_live;
using testing::running_status;
using testing::status_after;
using testing::with_exit;

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e["value"].get<std::string>();
  return "<unset>";
}

json live(json job) {
  job["spec"]["training"]["network"] = {{"recovery", "live"}};
  return job;
}

json live_job(json status = running_status(0), int replicas = 4) {
  return live(make_job("demo", replicas, std::move(status)));
}

// ---- the objects ----

TEST(LiveRecoveryObjects, RankPodsUseTheRendezvousServiceAsAnExternalStore) {
  json gang_pod = testing::rank_pod(parse_job(make_job("demo", 4)), 2, 0);
  EXPECT_EQ(env_of(gang_pod, "MASTER_ADDR"), "demo-rank-0.demo.ns1.svc");
  EXPECT_EQ(env_of(gang_pod, "PPU_EXTERNAL_STORE"), "<unset>") << "recovery gang: rank 0 hosts the store";

  json job = live_job();
  job["spec"]["masterPort"] = 31000;  // rank 0's port; the store's is the contract's
  const JobSpec s = parse_job(job);
  EXPECT_EQ(s.recovery, Recovery::Live);
  json pod = testing::rank_pod(s, 2, 0);
  EXPECT_EQ(env_of(pod, "MASTER_ADDR"), "demo-rendezvous.ns1.svc");
  EXPECT_EQ(env_of(pod, "MASTER_PORT"), std::to_string(contract::kRendezvousPort));
  EXPECT_EQ(env_of(pod, "PPU_EXTERNAL_STORE"), "1");
  EXPECT_EQ(env_of(pod, "RANK"), "2");
}

// The operator reads network.recovery with the runtime's own choice (core/config.h): its names,
// and its default when the key is absent.
TEST(LiveRecoveryObjects, TheRecoveryChoiceIsTheRuntimes) {
  EXPECT_EQ(parse_job(make_job("demo", 4)).recovery, NetworkConfig{}.recovery);
  for (const auto& name : choice_names<Recovery>()) {
    json job = make_job("demo", 4);
    job["spec"]["training"]["network"] = {{"recovery", name}};
    EXPECT_EQ(parse_job(job).recovery, parse_choice<Recovery>("network.recovery", name)) << name;
  }
}

TEST(LiveRecoveryObjects, TheStorePodFollowsTheRankPodsConventions) {
  json job = live_job();
  job["spec"]["imagePullPolicy"] = "Always";
  job["spec"]["scheduling"] = {{"nodeSelector", {{"pool", "train"}}}};
  const JobSpec s = parse_job(job);
  const json rank = testing::rank_pod(s, 0, 1);
  const json store = build_rendezvous_pod(s, 1);
  EXPECT_EQ(store["metadata"]["name"], "demo-rendezvous");
  EXPECT_EQ(store["metadata"]["labels"]["ppu.dev/job"], "demo") << "the job's NetworkPolicy selects it";
  EXPECT_EQ(store["metadata"]["labels"]["ppu.dev/role"], "rendezvous");
  EXPECT_FALSE(store["metadata"]["labels"].contains("ppu.dev/rank"));
  EXPECT_EQ(store["metadata"]["annotations"]["ppu.dev/restart"], "1");
  EXPECT_EQ(store["metadata"]["ownerReferences"], rank["metadata"]["ownerReferences"]);
  const json& c = store["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "ppu:test");
  EXPECT_EQ(c["imagePullPolicy"], "Always");
  EXPECT_EQ(c["command"],
            json::array({contract::kRendezvousBinary, "--port", std::to_string(contract::kRendezvousPort)}));
  EXPECT_EQ(c["ports"][0]["containerPort"], contract::kRendezvousPort);
  EXPECT_EQ(c["resources"]["requests"]["cpu"], "100m");
  EXPECT_EQ(c["securityContext"], rank["spec"]["containers"][0]["securityContext"]);
  EXPECT_EQ(store["spec"]["securityContext"], rank["spec"]["securityContext"]);
  EXPECT_EQ(store["spec"]["nodeSelector"], rank["spec"]["nodeSelector"]);
  EXPECT_EQ(store["spec"]["automountServiceAccountToken"], false);
  EXPECT_EQ(store["spec"]["restartPolicy"], "Always") << "restarted in place, empty: the ranks rebuild its keys";
  // A frozen store is found by a request, not by a connection (which a stopped one still accepts).
  EXPECT_EQ(c["livenessProbe"]["exec"]["command"],
            json::array({contract::kRendezvousBinary, "--probe",
                         "127.0.0.1:" + std::to_string(contract::kRendezvousPort), "--timeout", "5"}));
  EXPECT_GT(c["livenessProbe"]["timeoutSeconds"].get<int>(), 5) << "the probe's own start counts too";
  EXPECT_TRUE(is_rendezvous_pod(store));
  EXPECT_FALSE(is_rendezvous_pod(rank));

  const json svc = build_rendezvous_service(s);
  EXPECT_EQ(svc["metadata"]["name"], "demo-rendezvous");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None") << "headless: the name is the store pod's own address";
  EXPECT_EQ(svc["spec"]["selector"], store["metadata"]["labels"]);
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], contract::kRendezvousPort);
}

TEST(LiveRecovery, ANewJobGetsItsStoreBeforeAnyRank) {
  json job = live(make_job("demo", 2));
  Decision d = reconcile(observed(job, {}, /*owned_objects=*/false));
  std::vector<std::string> order;
  for (const auto& a : actions_of<CreateObject>(d)) order.push_back(resource(a.kind).kind + std::string("/") + a.name);
  EXPECT_EQ(order, (std::vector<std::string>{"ConfigMap/demo-config", "Service/demo", "NetworkPolicy/demo",
                                             "Service/demo-rendezvous", "Pod/demo-rendezvous", "Pod/demo-rank-0",
                                             "Pod/demo-rank-1"}));
  const json st = *new_status(d);
  EXPECT_EQ(st["recoveries"], 0);
  EXPECT_EQ(condition_of(st, condition::kDegraded)->at("reason"), reason::kNotRunning);

  // The gang job of the same spec: no store, no Degraded condition, no recoveries.
  Decision g = reconcile(observed(make_job("demo", 2), {}, false));
  EXPECT_EQ(count<CreateObject>(g, ResourceKind::Pod), 2);
  EXPECT_EQ(count<CreateObject>(g, ResourceKind::Service), 1);
  EXPECT_FALSE(new_status(g)->contains("recoveries"));
  EXPECT_FALSE(condition_of(*new_status(g), condition::kDegraded));
}

// ---- one rank lost: recreated alone, counted once ----

class LostRank : public ::testing::TestWithParam<int> {};  // the lost rank's exit code; -1: phase Unknown

TEST_P(LostRank, IsDeletedAloneAndCountedOnce) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  if (GetParam() < 0) pods[2]["status"]["phase"] = "Unknown";
  else pods[2] = with_exit(pods[2], GetParam(), "gone");
  Observed in = observed_live(job, pods);
  Decision d = reconcile(in);
  EXPECT_EQ(deleted_pods(d), std::vector<std::string>{"demo-rank-2"});
  EXPECT_EQ(actions_of<DeleteObject>(d, ResourceKind::Pod)[0].uid, "pod-2") << "exactly the pod seen";
  EXPECT_TRUE(created_pods(d).empty()) << "its name is not free yet";
  EXPECT_FALSE(d.gang_restart);
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{reason::kRankRecovery});
  json st = *new_status(d);
  EXPECT_EQ(st["phase"], phase::kRunning);
  EXPECT_EQ(st["recoveries"], 1);
  EXPECT_EQ(st["restartCount"], 0);
  EXPECT_EQ(st["recoveringRanks"],
            json::array({{{"rank", 2}, {"podUID", "pod-2"}, {"lostTime", at(0)}, {"attempt", 1}}}))
      << "a first loss: no back-off";
  EXPECT_EQ(st["recentRecoveries"], json::array({{{"rank", 2}, {"time", at(0)}}}));

  // The same pod seen again (the pod cache has not caught up): deleted again, not counted again.
  in.job["status"] = st;
  Decision again = reconcile(in);
  EXPECT_EQ(deleted_pods(again), std::vector<std::string>{"demo-rank-2"});
  EXPECT_EQ(status_after(in, again)["recoveries"], 1);
  EXPECT_TRUE(event_reasons(again).empty());

  // Gone: the replacement is created under the same name and rank, still one recovery.
  in.pods.erase(in.pods.begin() + 2);
  Decision create = reconcile(in);
  EXPECT_EQ(created_pods(create), std::vector<std::string>{"demo-rank-2"});
  EXPECT_EQ(env_of(actions_of<CreateObject>(create, ResourceKind::Pod)[0].object, "RANK"), "2");
  EXPECT_TRUE(deleted_pods(create).empty());
  EXPECT_EQ(status_after(in, create)["recoveries"], 1);

  // The replacement is seen (another uid): the record is dropped, the count stays.
  json replacement = make_pod(job, 2, "Pending");
  replacement["metadata"]["uid"] = "pod-2-b";
  in.pods.insert(in.pods.begin() + 2, replacement);
  Decision seen = reconcile(in);
  const json after = status_after(in, seen);
  EXPECT_EQ(after["recoveries"], 1);
  EXPECT_FALSE(after.contains("recoveringRanks")) << after.dump();
  EXPECT_TRUE(deleted_pods(seen).empty());
  EXPECT_TRUE(created_pods(seen).empty());

  // And when the replacement is lost in turn, that is a second recovery (its second loss within
  // the window: recovery_pacing_test.cpp follows its back-off).
  in.job["status"] = after;
  in.pods[2] = with_exit(replacement, 5, "out of the live group");
  const json second = status_after(in, reconcile(in));
  EXPECT_EQ(second["recoveries"], 2);
  EXPECT_EQ(second["recoveringRanks"][0]["attempt"], 2);
  EXPECT_EQ(second["recentRecoveries"].size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(ExitCodes, LostRank, ::testing::Values(5, 1, 137, -1),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param < 0 ? std::string("Unknown") : "Exit" + std::to_string(i.param);
                         });

TEST(LiveRecovery, APodThatVanishedUnseenIsRecreatedAndCountedOnce) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods.erase(pods.begin() + 1);  // deleted by hand, or removed with its node
  Observed in = observed_live(job, pods);
  Decision d = reconcile(in);
  EXPECT_EQ(created_pods(d), std::vector<std::string>{"demo-rank-1"});
  EXPECT_TRUE(deleted_pods(d).empty()) << "the other ranks keep running";
  EXPECT_FALSE(d.gang_restart);
  json st = *new_status(d);
  EXPECT_EQ(st["recoveries"], 1);
  EXPECT_EQ(st["restartCount"], 0);
  EXPECT_EQ(st["recoveringRanks"], json::array({{{"rank", 1}, {"podUID", ""}, {"lostTime", at(0)}, {"attempt", 1}}}));

  // A second pass before the new pod is in the cache creates it again (AlreadyExists), uncounted.
  in.job["status"] = st;
  Decision again = reconcile(in);
  EXPECT_EQ(created_pods(again), std::vector<std::string>{"demo-rank-1"});
  EXPECT_EQ(status_after(in, again)["recoveries"], 1);
}

TEST(LiveRecovery, AMissingRankBeforeTheJobRanIsACreationNotARecovery) {
  json job = live_job({{"phase", phase::kPending}, {"restartCount", 0}, {"startTime", at(-5)}});
  std::vector<json> pods = gang(job, 4, "Pending");
  pods.pop_back();
  Observed in = observed_live(job, pods);
  in.rendezvous_pod->at("status")["phase"] = "Pending";
  Decision d = reconcile(in);
  EXPECT_EQ(created_pods(d), std::vector<std::string>{"demo-rank-3"});
  EXPECT_EQ(status_after(in, d)["recoveries"], 0);
}

TEST(LiveRecovery, TwoRanksLostInOnePassAreTwoRecoveries) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[0] = with_exit(pods[0], 137, "");
  pods.erase(pods.begin() + 3);
  Decision d = reconcile(observed_live(job, pods));
  EXPECT_EQ(deleted_pods(d), std::vector<std::string>{"demo-rank-0"});
  EXPECT_EQ(created_pods(d), std::vector<std::string>{"demo-rank-3"});
  EXPECT_EQ(count_events(d, reason::kRankRecovery), 2);
  EXPECT_EQ((*new_status(d))["recoveries"], 2);
}

TEST(LiveRecovery, RecoveriesDoNotCountAgainstBackoffLimitButAgainstMaxRecoveries) {
  // restartCount already at backoffLimit (2): a lost rank is still recovered.
  json job = live_job(running_status(2));
  std::vector<json> pods = gang(job, 4, "Running");
  pods[1] = with_exit(pods[1], 1, "segfault");
  Decision d = reconcile(observed_live(job, pods));
  EXPECT_EQ((*new_status(d))["phase"], phase::kRunning);
  EXPECT_EQ((*new_status(d))["recoveries"], 1);

  // Loss events at maxRecoveries over the job's lifetime (recoveryWindowSeconds 0): the next loss
  // falls back to a gang restart, and every pod goes. (Windows: recovery_pacing_test.cpp.)
  json spent = running_status(0);
  spent["recoveries"] = 3;
  spent["recentRecoveries"] = json::array();
  for (int i = 0; i < 3; ++i) spent["recentRecoveries"].push_back({{"rank", i}, {"time", at(-1000 + 300 * i)}});
  job = live_job(spent);
  job["spec"]["runPolicy"]["maxRecoveries"] = 3;
  job["spec"]["runPolicy"]["recoveryWindowSeconds"] = 0;
  Decision f = reconcile(observed_live(job, pods));
  const json st = *new_status(f);
  EXPECT_EQ(st["phase"], phase::kRestarting);
  EXPECT_EQ(st["restartCount"], 1);
  EXPECT_NE(st.dump().find("rank 1 failed (exit code 1)"), std::string::npos) << st.dump();
  EXPECT_EQ(st["recoveries"], 3);
  EXPECT_EQ(deleted_pods(f).size(), 5u) << "ranks and the store";
  EXPECT_TRUE(created_pods(f).empty());
}

// ---- what the live group cannot survive: a gang restart, store included ----

TEST(LiveRecovery, ExitCode3RestartsTheGangAndTheStore) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[1] = with_exit(pods[1], 3, "too few ranks left");
  pods[2] = with_exit(pods[2], 5, "out of the live group");  // the gang restart wins
  Decision d = reconcile(observed_live(job, pods));
  EXPECT_TRUE(d.gang_restart);
  const json st = *new_status(d);
  EXPECT_EQ(st["phase"], phase::kRestarting);
  EXPECT_EQ(st["restartCount"], 1);
  EXPECT_EQ(st["recoveries"], 0);
  EXPECT_EQ(deleted_pods(d),
            (std::vector<std::string>{"demo-rank-0", "demo-rank-1", "demo-rank-2", "demo-rank-3", "demo-rendezvous"}));
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{reason::kGangRestart});
}

TEST(LiveRecovery, ALostStoreIsReplacedAloneWithoutAGangRestart) {
  json job = live_job();
  Observed failed = observed_live(job, gang(job, 4, "Running"));
  failed.rendezvous_pod = with_exit(*failed.rendezvous_pod, 1, "oom");
  Decision d = reconcile(failed);
  EXPECT_FALSE(d.gang_restart);
  EXPECT_EQ(deleted_pods(d), std::vector<std::string>{"demo-rendezvous"}) << "no rank pod is touched";
  EXPECT_TRUE(created_pods(d).empty()) << "the store's name is not free yet";
  EXPECT_EQ(event_reasons(d), std::vector<std::string>{reason::kStoreReplaced});

  Observed gone = observed_live(job, gang(job, 4, "Running"));
  gone.rendezvous_pod.reset();
  Decision g = reconcile(gone);
  EXPECT_FALSE(g.gang_restart);
  EXPECT_EQ(count<DeleteObject>(g, ResourceKind::Pod), 0);
  EXPECT_EQ(created_pods(g), std::vector<std::string>{"demo-rendezvous"});
  EXPECT_EQ(event_reasons(g), std::vector<std::string>{reason::kStoreReplaced});
  const json st = new_status(g) ? *new_status(g) : job["status"];
  EXPECT_EQ(st.value("restartCount", 0), 0);
}

TEST(LiveRecovery, RestartingWaitsForTheStoreAndRecreatesItFirst) {
  json restarting = {{"phase", phase::kRestarting},
                     {"restartCount", 1},
                     {"startTime", at(-100)},
                     {"nextRestartTime", at(-1)},
                     {"recoveringRanks", json::parse(R"([{"rank":1,"podUID":"pod-1"}])")}};
  json job = live_job(restarting);
  Observed in = observed_live(job, {});
  Decision wait = reconcile(in);
  EXPECT_EQ(deleted_pods(wait), std::vector<std::string>{"demo-rendezvous"});
  EXPECT_TRUE(created_pods(wait).empty()) << "the store's name is not free yet";

  in.rendezvous_pod.reset();
  Decision d = reconcile(in);
  EXPECT_EQ(created_pods(d),
            (std::vector<std::string>{"demo-rendezvous", "demo-rank-0", "demo-rank-1", "demo-rank-2", "demo-rank-3"}));
  const json st = *new_status(d);
  EXPECT_EQ(st["phase"], phase::kPending);
  EXPECT_FALSE(st.contains("recoveringRanks"));
  EXPECT_EQ(actions_of<CreateObject>(d, ResourceKind::Pod)[0].object["metadata"]["annotations"]["ppu.dev/restart"],
            "1");
}

TEST(LiveRecovery, SuspendDeletesTheStoreWithTheRanks) {
  json job = live_job();
  job["spec"]["runPolicy"]["suspend"] = true;
  Decision d = reconcile(observed_live(job, gang(job, 4, "Running")));
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Pod), 5);
  EXPECT_EQ(deleted_pods(d).back(), "demo-rendezvous");
}

TEST(LiveRecovery, AGangJobLosesARankAsBeforeAndDropsALeftoverStore) {
  json job = make_job("demo", 4, running_status(0));
  std::vector<json> pods = gang(job, 4, "Running");
  pods.erase(pods.begin() + 1);
  Observed in = observed_live(job, pods);  // a store left from a live spec edited while suspended
  Decision d = reconcile(in);
  EXPECT_TRUE(d.gang_restart);
  EXPECT_EQ((*new_status(d))["restartCount"], 1);
  EXPECT_FALSE((*new_status(d)).contains("recoveries"));
  EXPECT_EQ(deleted_pods(d).front(), "demo-rendezvous");
  EXPECT_EQ(count<DeleteObject>(d, ResourceKind::Service), 1);
}

// ---- the live group's figures and condition Degraded ----

struct DegradedRow {
  std::string name;
  std::optional<int64_t> live;
  std::optional<double> coverage;
  std::string status, reason;
};

std::ostream& operator<<(std::ostream& os, const DegradedRow& r) { return os << r.name; }

class Degraded : public ::testing::TestWithParam<DegradedRow> {};

TEST_P(Degraded, FollowsTheLiveGroup) {
  const DegradedRow& row = GetParam();
  json job = live_job();
  Observed in = observed_live(job, gang(job, 4, "Running"));
  if (row.live || row.coverage)
    in.progress = ScrapedProgress{5, 9.0, 4, row.live, row.coverage, std::nullopt, std::nullopt, std::nullopt};
  const json st = status_after(in, reconcile(in));
  const auto c = condition_of(st, condition::kDegraded);
  ASSERT_TRUE(c) << st.dump();
  EXPECT_EQ((*c)["status"], row.status);
  EXPECT_EQ((*c)["reason"], row.reason);
  if (row.live) {
    EXPECT_EQ(st["liveRanks"], *row.live);
    EXPECT_NE((*c)["message"].get<std::string>().find(std::to_string(*row.live) + " of 4 ranks"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(LiveGroup, Degraded,
                         ::testing::Values(DegradedRow{"Complete", 4, 1.0, "False", reason::kLiveGroupComplete},
                                           DegradedRow{"RankMissing", 3, 1.0, "True", reason::kLiveGroupDegraded},
                                           DegradedRow{"SliceUncovered", 4, 0.5, "True", reason::kLiveGroupDegraded},
                                           DegradedRow{"OnlyCoverageReported", std::nullopt, 0.75, "True",
                                                       reason::kLiveGroupDegraded},
                                           DegradedRow{"NothingReported", std::nullopt, std::nullopt, "False",
                                                       reason::kLiveGroupNotReported}),
                         [](const ::testing::TestParamInfo<DegradedRow>& i) { return i.param.name; });

// A rank being replaced makes the job Degraded at once, though the last scrape still saw the
// whole group: a replacement can rejoin before any scrape sees the group short.
TEST(LiveRecovery, ARankBeingReplacedIsDegradedBeforeAnyScrapeSeesIt) {
  json job = live_job();
  std::vector<json> pods = gang(job, 4, "Running");
  pods[2] = with_exit(pods[2], 137, "killed");
  Observed in = observed_live(job, pods);
  in.progress = ScrapedProgress{5, 9.0, 4, 4, 1.0, std::nullopt, std::nullopt, std::nullopt};
  const json st = *new_status(reconcile(in));
  const auto c = condition_of(st, condition::kDegraded);
  ASSERT_TRUE(c) << st.dump();
  EXPECT_EQ((*c)["status"], "True");
  EXPECT_EQ((*c)["reason"], reason::kLiveGroupDegraded);
  EXPECT_NE((*c)["message"].get<std::string>().find("rank(s) [2] being replaced"), std::string::npos)
      << (*c)["message"];
}

TEST(LiveRecovery, DegradedTurnsFalseWhenTheJobStopsRunning) {
  json st = running_status(0);
  st["conditions"] = json::array({{{"type", condition::kDegraded},
                                   {"status", "True"},
                                   {"reason", reason::kLiveGroupDegraded},
                                   {"message", "3 of 4"},
                                   {"lastTransitionTime", at(-10)}}});
  json job = live_job(st);
  std::vector<json> pods = gang(job, 4, "Running");
  pods[0] = with_exit(pods[0], 3, "peers gone");
  Observed in = observed_live(job, pods);
  in.progress = ScrapedProgress{5, 9.0, 4, 3, 0.5, std::nullopt, std::nullopt, std::nullopt};
  const json after = *new_status(reconcile(in));
  EXPECT_EQ(after["phase"], phase::kRestarting);
  EXPECT_EQ(condition_of(after, condition::kDegraded)->at("status"), "False");
  EXPECT_EQ(condition_of(after, condition::kDegraded)->at("reason"), reason::kNotRunning);
  EXPECT_EQ(after["minSliceCoverage"], "0.500");
}

TEST(LiveRecovery, AGangJobKeepsNoLiveGroupInItsStatus) {
  json job = make_job("demo", 4, running_status(0));
  Observed in = observed(job, gang(job, 4, "Running"));
  in.progress = ScrapedProgress{5,           9.0, 4, 0, 0.0, std::nullopt, std::nullopt,
                                std::nullopt};  // what a gang job's ranks might export
  const json st = status_after(in, reconcile(in));
  EXPECT_EQ(st["outerRound"], 5);
  EXPECT_FALSE(st.contains("liveRanks"));
  EXPECT_FALSE(st.contains("minSliceCoverage"));
  EXPECT_FALSE(condition_of(st, condition::kDegraded));
}

TEST(LiveRecovery, JobMetricsTakeTheSmallestLiveGroupAndCoverage) {
  auto rank = [](double live, double coverage) {
    return std::vector<Sample>{{"ppu_live_ranks", {}, live}, {"ppu_min_slice_coverage", {}, coverage}};
  };
  const JobMetrics m = aggregate_job_metrics({rank(4, 1.0), rank(3, 0.5), rank(4, 0.75)});
  EXPECT_EQ(m.live_ranks, 3);
  EXPECT_DOUBLE_EQ(*m.min_slice_coverage, 0.5);
  EXPECT_FALSE(aggregate_job_metrics({{{"ppu_outer_round", {}, 3}}}).live_ranks) << "a gang job's ranks";
}

}  // namespace
}  // namespace ppu::op
