// A store client outlives its store (engine/comm/store_clients.h) at no cost: once the store has
// closed the connection, the client's LibTorch watcher thread must sleep, not spin a core. And a
// served store drops a client that stops in the middle of a request instead of holding everyone.
// A retired client is destroyed on a thread of its own, never the caller's.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "../common/free_port.h"
#include "engine/comm/store_clients.h"
#include "store_server.h"

namespace ppu {
namespace {

using namespace std::chrono_literals;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A store that says on which thread it was destroyed (one whose watcher is parked would hang it).
class DestroyedOn : public c10d::HashStore {
 public:
  explicit DestroyedOn(std::promise<std::thread::id>& where) : where_(where) {}
  ~DestroyedOn() override { where_.set_value(std::this_thread::get_id()); }

 private:
  std::promise<std::thread::id>& where_;
};

TEST(StoreClients, ARetiredClientIsDestroyedOffTheCallersThreadWhateverItHeld) {
  std::promise<std::thread::id> where;
  auto destroyed = where.get_future();
  c10::intrusive_ptr<c10d::Store> client = c10::make_intrusive<DestroyedOn>(where);
  retire_store_client(std::move(client));  // the caller's reference goes with it
  // NOLINTNEXTLINE(bugprone-use-after-move): that the move emptied it is what is tested
  EXPECT_FALSE(client) << "the caller kept a reference: its thread could run the destructor";
  ASSERT_EQ(destroyed.wait_for(10s), std::future_status::ready);
  EXPECT_NE(destroyed.get(), std::this_thread::get_id());
}

TEST(StoreClients, AClientOfAStoreThatIsGoneCostsNoCpu) {
  keep_ranks_alive_when_the_store_dies();
  const int port = testing::free_port();
  auto server = testing::serve_store(port);
  auto client = testing::connect_to_store(port);
  client->set("k", {1});
  server.reset();  // the store goes: every connection to it is closed
  std::this_thread::sleep_for(200ms);
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(1s);
  const double used = process_cpu_seconds() - before;
  // A spinning watcher takes most of a core (about 1 s here); a sleeping one a few milliseconds.
  EXPECT_LT(used, 0.25) << "the process used " << used << " s of CPU in 1 s while idle with a client of a closed store";
  retire_store_client(client);
}

// A client cut off (or stopped) between two packets of a request: LibTorch 1.13's server reads a
// request whole on its one thread, so without the bound every other client waited for as long as
// the cut lasted (the client below would time out after 5 s).
TEST(StoreClients, AServedStoreDropsAClientThatStopsInTheMiddleOfARequest) {
  const int port = testing::free_port();
  bound_reads_of_served_connections(port, 500ms);
  auto server = testing::serve_store(port);
  const int stalled = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stalled, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // NOLINT: the sockets API
  // A SET query's type, then half of its key's 8-byte length, and nothing more.
  const uint8_t partial[5] = {0, 3, 0, 0, 0};
  ASSERT_EQ(send(stalled, partial, sizeof partial, 0), static_cast<ssize_t>(sizeof partial));
  std::this_thread::sleep_for(100ms);  // the server is now reading the rest

  // Another client's requests, on a thread of their own: without the bound they never return.
  auto answered = std::make_shared<std::promise<std::vector<uint8_t>>>();
  auto answer = answered->get_future();
  std::thread([port, answered] {
    auto client = testing::connect_to_store(port);
    client->set("k", {7});
    answered->set_value(client->get("k"));
    retire_store_client(client);
  }).detach();
  ASSERT_EQ(answer.wait_for(3s), std::future_status::ready) << "the store answered nobody while a request hung";
  EXPECT_EQ(answer.get(), std::vector<uint8_t>{7});

  // The stalled client's connection was closed by the server.
  pollfd closed{stalled, POLLIN, 0};
  ASSERT_EQ(poll(&closed, 1, 3000), 1);
  uint8_t byte = 0;
  EXPECT_LE(recv(stalled, &byte, 1, 0), 0);
  close(stalled);
}

}  // namespace
}  // namespace ppu
