// A store client outlives its store (engine/comm/store_clients.h) at no cost: once the store has
// closed the connection, the client's LibTorch watcher thread must sleep, not spin a core.
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <thread>

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

TEST(StoreClients, AClientOfAStoreThatIsGoneCostsNoCpu) {
  keep_ranks_alive_when_the_store_dies();
  const int port = testing::free_port();
  auto server = testing::serve_store(port);
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = false;
  opts.waitWorkers = false;
  auto client = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
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

}  // namespace
}  // namespace ppu
