// QuorumCloseWatch (engine/train/quorum_close_watch.h) against a real TCPStore: an ask that
// waits returns what the store holds now; one that does not is answered by the watch's thread
// a moment later; a store that is gone leaves the sync point open (the rank trains on) and
// never holds the asking rank past the watch's bound.
#include "engine/train/quorum_close_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "../../common/free_port.h"
#include "../comm/store_server.h"
#include "engine/comm/live_store_keys.h"

namespace ppu {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

void put(c10d::Store& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

// A client of the store only: the store says a group of the job exists, so it forms none.
Collectives client_of(int port, c10d::Store& server) {
  put(server, live_keys::kFirstGroup, "0,1");
  return Collectives({1, 2, "127.0.0.1", port, /*external_store=*/true}, 30s);
}

TEST(QuorumCloseWatch, AnAskThatWaitsReturnsWhatTheStoreHoldsNow) {
  const int port = testing::free_port();
  auto server = testing::serve_store(port);
  Collectives col = client_of(port, *server);
  const Config config;
  QuorumCloseWatch watch(config, col);
  watch.ask(10, /*wait=*/true);
  EXPECT_FALSE(watch.closed(10)) << "nobody closed it";
  put(*server, live_keys::quorum(10, "closed"), "grace");
  watch.ask(10, /*wait=*/true);
  EXPECT_TRUE(watch.closed(10));
  EXPECT_TRUE(watch.closed(5)) << "a later sync point closed: the earlier ones are closed too";
  EXPECT_FALSE(watch.closed(20));
}

TEST(QuorumCloseWatch, AnAskThatDoesNotWaitIsAnsweredByTheWatchsThread) {
  const int port = testing::free_port();
  auto server = testing::serve_store(port);
  Collectives col = client_of(port, *server);
  const Config config;
  QuorumCloseWatch watch(config, col);
  put(*server, live_keys::quorum(30, "closed"), "all");
  const auto deadline = Clock::now() + 5s;
  while (!watch.closed(30) && Clock::now() < deadline) {
    watch.ask(30, /*wait=*/false);  // as a fast rank asks before each step
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(watch.closed(30));
}

TEST(QuorumCloseWatch, AStoreThatIsGoneLeavesTheSyncPointOpenWithinTheBound) {
  const int port = testing::free_port();
  auto server = testing::serve_store(port);
  Collectives col = client_of(port, *server);
  const Config config;
  QuorumCloseWatch watch(config, col);
  watch.ask(10, /*wait=*/true);  // connected
  server.reset();
  const auto asked = Clock::now();
  watch.ask(40, /*wait=*/true);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - asked).count(), 3.5) << "bounded";
  EXPECT_FALSE(watch.closed(40)) << "the store cannot say: the rank trains on";
}

}  // namespace
}  // namespace ppu
