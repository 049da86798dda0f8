// The rendezvous store dying under a live group (engine/comm/bounded_store.h, live_group.h),
// with the real parts in threads: a store request is bounded in time and a lost connection fails
// fast until reconnected; a restarted (empty) store is recognised by its incarnation; a commit
// whose outcome the restart lost takes the outcome a member saw, or aborts on every member alike,
// and the group then re-forms in the new store; when the store restarted while forming a
// generation failed, members that stood at two generations meet at the later one, and a waiting
// replacement still finds the generation that admits it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../common/free_port.h"
#include "core/exit_status.h"
#include "core/job_contract.h"
#include "engine/comm/bounded_store.h"
#include "engine/comm/live_group.h"
#include "engine/comm/live_store_keys.h"
#include "engine/comm/store_clients.h"
#include "live_members.h"
#include "store_server.h"

namespace ppu {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::array<std::atomic<bool>, 3> g_silent{};

using testing::put;

// A store server that writes an incarnation, as ppu-rendezvous does. Its clients' watcher
// threads outlive its death, as in ppu-train (store_clients.h).
c10::intrusive_ptr<c10d::TCPStore> serve(int port, const std::string& incarnation) {
  keep_ranks_alive_when_the_store_dies();
  auto server = testing::serve_store(port);
  put(*server, contract::kStoreIncarnationKey, incarnation);
  return server;
}

struct Member : testing::LiveMember {
  Member(int rank, int world, int port) : LiveMember(rank, world, port, [](int r) { return g_silent[r].load(); }) {
    group.set_store_limits(2s, 20s);
  }
};

using testing::each;
using testing::sum_of_ones;

// A plain client of the store at `port`.
c10::intrusive_ptr<c10d::TCPStore> client_of(int port) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = false;
  opts.waitWorkers = false;
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

// Each member's account in the store as its heartbeat would write it.
void announce_all(std::vector<std::unique_ptr<Member>>& m, int port) {
  auto client = client_of(port);
  for (auto& member : m) member->group.announcer()(*client);
}

// A TCP listener that accepts connections and never answers: a store whose host is stopped.
struct SilentListener {
  explicit SilentListener(int port) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0)
      throw std::runtime_error("cannot listen on " + std::to_string(port));
  }
  ~SilentListener() { close(fd); }
  int fd;
};

TEST(BoundedStore, AStoreThatStopsAnsweringIsLostWithinTheRequestTimeout) {
  const int port = testing::free_port();
  auto server = serve(port, "first");
  Collectives col = testing::store_only_client(port, *server);
  ASSERT_TRUE(col.joining());
  BoundedStore store(col, 1s);
  EXPECT_EQ(store.incarnation(), "first");
  store.set("k", "v");
  EXPECT_EQ(store.get("k"), "v");

  // The store dies; a stopped host takes its port: the request is cut off at its timeout.
  server.reset();
  SilentListener stopped(port);
  col.reconnect_store();
  const auto asked = Clock::now();
  EXPECT_THROW(store.check("k"), StoreLost);
  const double waited = std::chrono::duration<double>(Clock::now() - asked).count();
  EXPECT_GE(waited, 0.9);
  EXPECT_TRUE(store.lost());
  EXPECT_THROW(store.add("n", 1), StoreLost);    // at once: the connection is lost until reconnect()
  EXPECT_THROW(store.reconnect(2s), StoreLost);  // it never answers within the patience
}

TEST(BoundedStore, AReconnectTellsARestartedStoreByItsIncarnation) {
  const int port = testing::free_port();
  auto server = serve(port, "first");
  Collectives col = testing::store_only_client(port, *server);
  BoundedStore store(col, 2s);
  store.set("k", "v");
  server.reset();
  EXPECT_THROW(store.get("k"), StoreLost);
  std::thread restart([&] {
    std::this_thread::sleep_for(500ms);
    server = serve(port, "second");
  });
  EXPECT_EQ(store.reconnect(10s), "second");
  restart.join();
  EXPECT_FALSE(store.lost());
  EXPECT_FALSE(store.check("k"));  // the restarted store lost its keys
}

// The abort probe's connection (LiveGroup): lost until its first reconnect, and never the
// rank's shared one, which only the training thread replaces.
TEST(BoundedStore, AnOwnConnectionIsLostUntilReconnectedAndLeavesTheSharedOneAlone) {
  const int port = testing::free_port();
  auto server = serve(port, "first");
  Collectives col = testing::store_only_client(port, *server);
  const auto shared = col.store();
  BoundedStore own(col, 1s, BoundedStore::Connection::Own);
  EXPECT_TRUE(own.lost());
  EXPECT_THROW(own.check("k"), StoreLost);
  EXPECT_EQ(own.reconnect(0ms), "first");
  EXPECT_FALSE(own.lost());
  put(*server, "k", "v");
  EXPECT_EQ(own.get("k"), "v");
  EXPECT_EQ(own.reconnect(0ms), "first");  // a second one replaces its own connection only
  EXPECT_EQ(col.store().get(), shared.get());
}

// Three members of the first group, in a store ppu-rendezvous could have started.
struct ThreeMembers : ::testing::Test {
  void SetUp() override {
    for (auto& s : g_silent) s = false;
    port = testing::free_port();
    server = serve(port, "first");
    m.resize(3);
    each({0, 1, 2}, [&](int r) { m[r] = std::make_unique<Member>(r, 3, port); });
  }
  // The store dies and its supervisor starts it again, empty.
  void restart_store() {
    server.reset();
    server = serve(port, "second");
  }
  int port = 0;
  c10::intrusive_ptr<c10d::TCPStore> server;
  std::vector<std::unique_ptr<Member>> m;
};

// One exchange committed; then the store restarts.
struct RestartedGroup : ThreeMembers {
  void SetUp() override {
    ThreeMembers::SetUp();
    std::vector<int> committed(3);
    each({0, 1, 2}, [&](int r) { committed[r] = m[r]->group.commit(true); });
    ASSERT_EQ(committed, (std::vector<int>{1, 1, 1}));
    restart_store();
  }
};

TEST_F(RestartedGroup, ACommitNoMemberSawAbortsEverywhereAndTheGroupReformsInTheNewStore) {
  announce_all(m, port);  // every member pending at exchange 1
  std::vector<int> committed(3, -1);
  each({0, 1, 2}, [&](int r) { committed[r] = m[r]->group.commit(true); });
  EXPECT_EQ(committed, (std::vector<int>{0, 0, 0}));
  std::vector<std::vector<int>> lost(3);
  each({0, 1, 2}, [&](int r) { lost[r] = m[r]->group.recover(); });
  EXPECT_EQ(lost[0], std::vector<int>{});
  EXPECT_EQ(m[2]->group.generation(), 1);
  std::vector<double> sums(3);
  each({0, 1, 2}, [&](int r) { sums[r] = sum_of_ones(m[r]->col); });
  EXPECT_EQ(sums, (std::vector<double>{3, 3, 3}));
  const auto outages = m[0]->group.take_store_outages();
  ASSERT_EQ(outages.size(), 1u);
  EXPECT_TRUE(outages[0].restarted);
}

TEST_F(RestartedGroup, ACommitAMemberSawBeforeTheRestartCommitsOnTheOthers) {
  announce_all(m, port);
  // Rank 2 read "commit" for exchange 1 just before the store died (its account says it went on).
  put(*client_of(port), live_keys::account(2), "0 2 c 0,1,2");
  std::vector<int> committed(2, -1);
  each({0, 1}, [&](int r) { committed[r] = m[r]->group.commit(true); });
  EXPECT_EQ(committed, (std::vector<int>{1, 1}));
}

TEST_F(RestartedGroup, AMemberThatFindsALaterGenerationFormedWithoutItIsOutOfTheGroup) {
  announce_all(m, port);
  put(*client_of(port), live_keys::account(1), "1 0 - 1,2");  // ranks 1 and 2 formed generation 1 before the restart
  EXPECT_THROW(m[0]->group.commit(true), OutOfGroup);
}

// Three members of generation 0. Ranks 0 and 1 begin forming generation 1, decided with rank 2
// listed (it arrived), which never forms it: forming fails on both, and they count generation 1
// as past while rank 2 stands before it. Then the store restarts.
struct FormingFailedThenTheStoreRestarted : ThreeMembers {
  void SetUp() override {
    ThreeMembers::SetUp();
    for (auto& member : m) {
      member->col.set_connect_timeout(3s);
      member->group.set_patience(10s);
    }
    put(*client_of(port), live_keys::of_generation(1, "arrived/2"), "1");
    std::array<bool, 2> failed{};
    each({0, 1}, [&](int r) {
      try {
        m[r]->group.recover();
      } catch (const PeerError&) {
        failed[r] = true;
      }
    });
    ASSERT_EQ(failed, (std::array<bool, 2>{true, true})) << "generation 1 formed without its listed rank 2";
    ASSERT_EQ(m[0]->group.generation(), 1);
    ASSERT_EQ(m[2]->group.generation(), 0);
    restart_store();
  }
  // The members' heartbeats write their accounts (still of generation 0 after the failed forming).
  void announce(const std::vector<int>& ranks) {
    auto client = client_of(port);
    for (int r : ranks) m[r]->group.announcer()(*client);
  }
};

// In the new store the three meet at generation 2, instead of each waiting for the others at its
// own number until the patience runs out and leaving each other out (CI once: a survivor left out
// of the group after a store restart during a re-formation, then an exit 3).
TEST_F(FormingFailedThenTheStoreRestarted, MembersAtTwoGenerationsMeetAtTheLaterOne) {
  std::vector<std::vector<int>> lost(3);
  each({0, 1, 2}, [&](int r) { lost[r] = m[r]->group.recover(); });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(m[r]->group.generation(), 2) << "rank " << r;
    EXPECT_EQ(m[r]->col.members(), (std::vector<int>{0, 1, 2})) << "rank " << r;
    EXPECT_EQ(lost[r], std::vector<int>{}) << "rank " << r;
  }
  std::vector<double> sums(3);
  each({0, 1, 2}, [&](int r) { sums[r] = sum_of_ones(m[r]->col); });
  EXPECT_EQ(sums, (std::vector<double>{3, 3, 3}));
}

// Rank 2 dies instead: ranks 0 and 1 form generation 2 in the new store, and no member's account
// ever said 1. A replacement that asked to join in the new store before that must still find the
// members' generations past the one the new store never held, and be taken in.
TEST_F(FormingFailedThenTheStoreRestarted, AReplacementFindsTheGroupPastAGenerationTheStoreNeverHeld) {
  m[2].reset();
  g_silent[2] = true;  // the old process is gone
  announce({0, 1});
  std::unique_ptr<Member> replacement;
  bool joined = false;
  std::thread join([&] {
    replacement = std::make_unique<Member>(2, 3, port);
    joined = replacement->group.join();
  });
  bool asked = false;
  for (auto deadline = Clock::now() + 20s; !asked && Clock::now() < deadline; std::this_thread::sleep_for(20ms))
    asked = client_of(port)->add(live_keys::kJoins, 0) > 0;
  EXPECT_TRUE(asked) << "the replacement never asked to join";

  // The members re-form in the new store as generation 2 and take the replacement in.
  std::vector<std::vector<int>> lost(2), joiners(2), added(2);
  each({0, 1}, [&](int r) { lost[r] = m[r]->group.recover(); });
  EXPECT_EQ(m[0]->group.generation(), 2);
  EXPECT_EQ(lost[0], (std::vector<int>{2}));
  announce({0, 1});
  g_silent[2] = false;
  for (auto deadline = Clock::now() + 20s; Clock::now() < deadline && joiners[0].empty();)
    each({0, 1}, [&](int r) { joiners[r] = m[r]->group.pending_joiners(); });
  EXPECT_EQ(joiners[0], (std::vector<int>{2}));
  std::array<bool, 2> admitted{};
  if (!joiners[0].empty())
    each({0, 1}, [&](int r) {
      try {
        added[r] = m[r]->group.admit(joiners[r]);
        admitted[r] = true;
      } catch (const PeerError&) {  // the replacement never formed generation 3
      }
    });
  if (!admitted[0] || !admitted[1])
    for (int r : {0, 1}) m[r]->group.finish("{}");  // so that the replacement's join() returns
  join.join();
  ASSERT_EQ(admitted, (std::array<bool, 2>{true, true})) << "the replacement did not form generation 3";
  ASSERT_TRUE(joined);
  EXPECT_EQ(added[0], (std::vector<int>{2}));
  EXPECT_EQ(replacement->group.generation(), 3);
  m[2] = std::move(replacement);
  std::vector<double> sums(3);
  each({0, 1, 2}, [&](int r) { sums[r] = sum_of_ones(m[r]->col); });
  EXPECT_EQ(sums, (std::vector<double>{3, 3, 3}));
}

// A replacement can start while the store is fresh from a restart and no member has written
// its account there yet: it must not take itself for a first rank (that one waits for
// generation 0, which nobody else will form). It waits until the members' heartbeats mark the
// first group again, then joins as a replacement.
TEST(StartingProcess, InARestartedStoreWaitsForTheMembersAndIsAReplacement) {
  const int port = testing::free_port();
  auto server = serve(port, "restarted");
  std::thread member([port] {
    std::this_thread::sleep_for(500ms);  // a member's heartbeat reaches the new store
    put(*client_of(port), live_keys::kFirstGroup, "0,1,2");
  });
  const auto start = Clock::now();
  Collectives col({1, 3, "127.0.0.1", port, /*external_store=*/true}, 30s);
  member.join();
  EXPECT_TRUE(col.joining());
  EXPECT_GE(Clock::now() - start, 400ms) << "it decided before the marker existed";
}

// Every rank of a starting job checks in: then they form generation 0 together, however late
// the last one comes.
TEST(StartingProcess, RanksThatAllCheckInFormTheFirstGroup) {
  const int port = testing::free_port();
  auto server = serve(port, "fresh");
  std::vector<int> joining(3, -1);
  each({0, 1, 2}, [&](int r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300 * r));
    Collectives col({r, 3, "127.0.0.1", port, /*external_store=*/true}, 30s);
    joining[r] = col.joining() ? 1 : 0;
    EXPECT_EQ(col.members(), (std::vector<int>{0, 1, 2}));
  });
  EXPECT_EQ(joining, (std::vector<int>{0, 0, 0}));
}

// A rank that never starts: the others name it once the timeout has passed.
TEST(StartingProcess, ARankThatNeverStartsIsNamed) {
  const int port = testing::free_port();
  auto server = serve(port, "fresh");
  try {
    Collectives col({0, 2, "127.0.0.1", port, /*external_store=*/true}, 1s);
    FAIL() << "formed a group without rank 1";
  } catch (const PeerError& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) [1]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ppu
