// Unit tests of the kube/ machinery against FakeKube (tests/operator/kube/fake_kube.h): the
// informer's list + watch + relist and the leader elector (the executor's 404/409 handling:
// tests/operator/controller/executor_test.cpp).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "kube/fake_kube.h"
#include "kube/informer.h"
#include "kube/kube_client.h"
#include "kube/leader_election.h"
#include "kube/rfc3339.h"
#include "test_objects.h"
#include "wait_until.h"

namespace ppu::op {
namespace {

using testing::FakeKube;
using testing::make_job;
using testing::make_pod;

template <class Pred>
bool eventually(Pred pred) {
  return testing::wait_until(pred, 20, std::chrono::milliseconds(5));
}

// ---- Informer ----

struct Recorder {
  std::mutex mu;
  std::vector<std::pair<std::string, Informer::Change>> seen;
  Informer::Handler handler() {
    return [this](const json& o, Informer::Change c) {
      std::lock_guard<std::mutex> l(mu);
      seen.emplace_back(o["metadata"]["name"].get<std::string>(), c);
    };
  }
  int count(const std::string& name, Informer::Change c) {
    std::lock_guard<std::mutex> l(mu);
    int n = 0;
    for (const auto& [k, v] : seen)
      if (k == name && v == c) ++n;
    return n;
  }
};

json labelled_pod(const std::string& name, const std::string& job) {
  return {{"metadata", {{"name", name}, {"namespace", "ns1"}, {"labels", {{kJobLabel, job}}}}},
          {"status", {{"phase", "Pending"}}}};
}

TEST(Informer, ListFillsTheCacheWithKindAndApiVersionThenWatchKeepsItTrue) {
  FakeKube kube;
  kube.put(ResourceKind::Pod, labelled_pod("a", "j1"));
  kube.put(ResourceKind::Pod, labelled_pod("b", "j1"));
  json unlabelled = labelled_pod("c", "j1");
  unlabelled["metadata"].erase("labels");
  kube.put(ResourceKind::Pod, unlabelled);
  Recorder rec;
  Informer inf(kube, ResourceKind::Pod, "ns1", kJobLabel, rec.handler());
  inf.start();
  ASSERT_TRUE(eventually([&] { return inf.synced(); }));
  EXPECT_EQ(inf.list().size(), 2u) << "the selector keeps unlabelled pods out";
  auto a = inf.get("ns1", "a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)["kind"], "Pod") << "list items get the list's kind";
  EXPECT_EQ((*a)["apiVersion"], "v1");
  EXPECT_EQ(inf.by_job("ns1", "j1").size(), 2u);

  kube.put(ResourceKind::Pod, labelled_pod("d", "j2"));
  ASSERT_TRUE(kube.remove(ResourceKind::Pod, "ns1", "a").ok());
  ASSERT_TRUE(eventually([&] { return inf.get("ns1", "d").has_value() && !inf.get("ns1", "a"); }));
  EXPECT_EQ(rec.count("a", Informer::Change::Deleted), 1);
  EXPECT_EQ(inf.by_job("ns1", "j1").size(), 1u);
  EXPECT_EQ(inf.by_job("ns1", "j2").size(), 1u);
  EXPECT_EQ(inf.relists(), 1u);
  inf.stop();
}

TEST(Informer, GoneRelistsAndReportsWhatVanishedMeanwhile) {
  FakeKube kube;
  kube.put(ResourceKind::Pod, labelled_pod("a", "j1"));
  kube.put(ResourceKind::Pod, labelled_pod("b", "j1"));
  Recorder rec;
  Informer inf(kube, ResourceKind::Pod, "ns1", kJobLabel, rec.handler());
  inf.start();
  ASSERT_TRUE(eventually([&] { return inf.synced() && inf.list().size() == 2; }));

  // The watch hears nothing while b is deleted and c created, and then the history is compacted:
  // resuming from the informer's resourceVersion answers 410 Gone.
  kube.pause_watches(true);
  ASSERT_TRUE(kube.remove(ResourceKind::Pod, "ns1", "b").ok());
  json a2 = labelled_pod("a", "j1");
  a2["status"]["phase"] = "Running";
  kube.put(ResourceKind::Pod, a2);
  kube.put(ResourceKind::Pod, labelled_pod("c", "j1"));
  kube.compact();
  kube.pause_watches(false);

  ASSERT_TRUE(eventually([&] { return inf.relists() == 2 && inf.list().size() == 2; })) << inf.relists();
  EXPECT_FALSE(inf.get("ns1", "b").has_value());
  EXPECT_EQ(rec.count("b", Informer::Change::Deleted), 1) << "the relist reports b's deletion";
  EXPECT_EQ(rec.count("c", Informer::Change::Added), 1);
  EXPECT_EQ(rec.count("a", Informer::Change::Modified), 1);
  auto a = inf.get("ns1", "a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ((*a)["status"]["phase"], "Running");

  // And watching resumes from the relist's resourceVersion.
  kube.put(ResourceKind::Pod, labelled_pod("d", "j1"));
  ASSERT_TRUE(eventually([&] { return inf.get("ns1", "d").has_value(); }));
  EXPECT_EQ(inf.relists(), 2u);
  inf.stop();
}

TEST(Informer, RetriesAFailedListAndResumesAClosedWatchWithoutRelisting) {
  FakeKube kube;
  kube.put(ResourceKind::Pod, labelled_pod("a", "j1"));
  kube.fail("list", ResourceKind::Pod, 500, 2);
  Recorder rec;
  Informer inf(kube, ResourceKind::Pod, "", kJobLabel, rec.handler());
  inf.start();
  ASSERT_TRUE(eventually([&] { return inf.synced(); }));
  EXPECT_EQ(kube.count_calls("list pods"), 3) << "two failed lists, then one that worked";
  EXPECT_EQ(inf.relists(), 1u);

  ASSERT_TRUE(eventually([&] { return kube.count_calls("watch pods") >= 1; }));
  kube.close_watches();  // the server's watch time-out
  kube.put(ResourceKind::Pod, labelled_pod("b", "j1"));
  ASSERT_TRUE(eventually([&] { return inf.get("ns1", "b").has_value(); }));
  EXPECT_EQ(inf.relists(), 1u) << "a closed watch resumes from its resourceVersion";
  EXPECT_GE(inf.watch_restarts(), 1u);
  EXPECT_EQ(rec.count("b", Informer::Change::Added), 1);
  inf.stop();
}

// ---- LeaderElector ----

LeaseOptions lease_options(const std::string& identity) {
  LeaseOptions o;
  o.ns = "ops";
  o.identity = identity;
  o.lease_duration_s = 15;
  return o;
}

TEST(LeaderElector, CreatesTheLeaseWhenAbsent) {
  FakeKube kube;
  LeaderElector a(kube, lease_options("a"));
  EXPECT_TRUE(a.try_acquire_or_renew());
  EXPECT_TRUE(a.leader());
  auto lease = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 15);
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 0);
  EXPECT_TRUE(a.try_acquire_or_renew()) << "renewing our own lease";
}

TEST(LeaderElector, AFreshLeaseOfAnotherHolderIsRespected) {
  FakeKube kube;
  LeaderElector a(kube, lease_options("a")), b(kube, lease_options("b"));
  ASSERT_TRUE(a.try_acquire_or_renew());
  EXPECT_FALSE(b.try_acquire_or_renew());
  EXPECT_FALSE(b.leader());
  auto lease = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
}

TEST(LeaderElector, AnExpiredLeaseIsTakenOverAndCountsATransition) {
  FakeKube kube;
  LeaderElector a(kube, lease_options("a")), b(kube, lease_options("b"));
  ASSERT_TRUE(a.try_acquire_or_renew());
  auto lease = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(lease.has_value());
  (*lease)["spec"]["renewTime"] = format_rfc3339_micro(now_seconds_precise() - 60);  // a stopped renewing
  kube.put(ResourceKind::Lease, *lease);
  EXPECT_TRUE(b.try_acquire_or_renew());
  lease = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  EXPECT_FALSE(a.try_acquire_or_renew()) << "the old holder finds b's fresh lease";
}

TEST(LeaderElector, LosingTheRaceIsNotLeadership) {
  FakeKube kube;
  LeaderElector b(kube, lease_options("b"));
  kube.fail("create", ResourceKind::Lease, 409, 1, "AlreadyExists");  // another replica created it first
  EXPECT_FALSE(b.try_acquire_or_renew());
  LeaderElector a(kube, lease_options("a"));
  ASSERT_TRUE(a.try_acquire_or_renew());
  auto lease = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(lease.has_value());
  (*lease)["spec"]["renewTime"] = format_rfc3339_micro(now_seconds_precise() - 60);
  kube.put(ResourceKind::Lease, *lease);
  kube.fail("replace", ResourceKind::Lease, 409, 1, "Conflict");  // a renewed between b's read and write
  EXPECT_FALSE(b.try_acquire_or_renew());
  EXPECT_FALSE(b.leader());
  kube.fail("get", ResourceKind::Lease, 0, 1);  // no answer at all
  EXPECT_FALSE(b.try_acquire_or_renew());
}

TEST(LeaderElector, ReleaseHandsTheLeaseOverAtOnce) {
  FakeKube kube;
  LeaderElector a(kube, lease_options("a")), b(kube, lease_options("b"));
  ASSERT_TRUE(a.try_acquire_or_renew());
  ASSERT_FALSE(b.try_acquire_or_renew());
  a.release();
  EXPECT_FALSE(a.leader());
  auto lease = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "");
  EXPECT_TRUE(b.try_acquire_or_renew());
}

TEST(LeaderElector, KeepCallsOnLostWhenRenewalsFailPastTheLease) {
  FakeKube kube;
  LeaseOptions o = lease_options("a");
  o.lease_duration_s = 1;
  o.renew_every_s = 0.1;
  LeaderElector a(kube, o);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(a.acquire(stop));
  std::atomic<int> lost{0};
  kube.fail("get", ResourceKind::Lease, 503, -1);
  a.keep([&] { lost++; });
  ASSERT_TRUE(eventually([&] { return lost.load() == 1; }));
  EXPECT_FALSE(a.leader());
  EXPECT_GE(kube.count_calls("get leases"), 2) << "transient failures are retried before giving up";
  kube.clear_failures();
}

TEST(LeaderElector, KeepRenewsTheRenewTime) {
  FakeKube kube;
  LeaseOptions o = lease_options("a");
  o.renew_every_s = 0.05;
  LeaderElector a(kube, o);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(a.acquire(stop));
  auto first = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(first.has_value());
  bool lost = false;
  a.keep([&] { lost = true; });
  ASSERT_TRUE(eventually([&] {
    auto now = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
    return now && (*now)["metadata"]["resourceVersion"] != (*first)["metadata"]["resourceVersion"];
  }));
  a.release();
  EXPECT_FALSE(lost);
  auto last = kube.peek(ResourceKind::Lease, "ops", "ppu-operator-leader");
  ASSERT_TRUE(last.has_value());
  EXPECT_NE((*last)["spec"]["renewTime"], (*first)["spec"]["renewTime"]);
}

}  // namespace
}  // namespace ppu::op
