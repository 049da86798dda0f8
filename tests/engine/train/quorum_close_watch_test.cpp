// QuorumCloseWatch (engine/train/quorum_close_watch.h) against a real TCPStore: an ask that
// waits returns what the store holds now; one that does not is answered by the watch's thread
// a moment later; a store that is gone leaves the sync point open (the rank trains on) and
// never holds the asking rank past the watch's bound.
#include "engine/train/quorum_close_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "../../common/free_port.h"
#include "../comm/store_server.h"
#include "engine/comm/live_store_keys.h"

namespace ppu {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A store, a rank that is its client only, and the rank's watch.
class QuorumCloseWatchTest : public ::testing::Test {
 protected:
  void close(int64_t step) { testing::put(*server_, live_keys::quorum(step, "closed"), "grace"); }

  const int port_ = testing::free_port();
  c10::intrusive_ptr<c10d::TCPStore> server_ = testing::serve_store(port_);
  Collectives col_ = testing::store_only_client(port_, *server_);
  const Config config_{};
  QuorumCloseWatch watch_{config_, col_};
};

TEST_F(QuorumCloseWatchTest, AnAskThatWaitsReturnsWhatTheStoreHoldsNow) {
  watch_.ask(10, /*wait=*/true);
  EXPECT_FALSE(watch_.closed(10)) << "nobody closed it";
  close(10);
  watch_.ask(10, /*wait=*/true);
  EXPECT_TRUE(watch_.closed(10));
  EXPECT_TRUE(watch_.closed(5)) << "a later sync point closed: the earlier ones are closed too";
  EXPECT_FALSE(watch_.closed(20));
}

TEST_F(QuorumCloseWatchTest, AnAskThatDoesNotWaitIsAnsweredByTheWatchsThread) {
  close(30);
  const auto deadline = Clock::now() + 5s;
  while (!watch_.closed(30) && Clock::now() < deadline) {
    watch_.ask(30, /*wait=*/false);  // as a fast rank asks before each step
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(watch_.closed(30));
}

TEST_F(QuorumCloseWatchTest, AStoreThatIsGoneLeavesTheSyncPointOpenWithinTheBound) {
  watch_.ask(10, /*wait=*/true);  // connected
  server_.reset();
  const auto asked = Clock::now();
  watch_.ask(40, /*wait=*/true);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - asked).count(), 3.5) << "bounded";
  EXPECT_FALSE(watch_.closed(40)) << "the store cannot say: the rank trains on";
}

}  // namespace
}  // namespace ppu
