// Test helper: a c10d TCPStore server on loopback at `port`, as rank 0 or ppu-rendezvous serves
// it (no worker count to wait for), a client of it, a key written as text, and a rank that is a
// client of the store only. Shared by the heartbeat, live-group, store-client, store-restart and
// quorum tests.
#pragma once

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/comm/collectives.h"
#include "engine/comm/live_store_keys.h"

namespace ppu::testing {

inline c10::intrusive_ptr<c10d::TCPStore> loopback_store(int port, bool server) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = server;
  opts.waitWorkers = false;
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

inline c10::intrusive_ptr<c10d::TCPStore> serve_store(int port) { return loopback_store(port, true); }
inline c10::intrusive_ptr<c10d::TCPStore> connect_to_store(int port) { return loopback_store(port, false); }

inline void put(c10d::Store& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

// Job rank 1 of 2 as a client of the store only: the store says a group of the job exists, so
// it forms none.
inline Collectives store_only_client(int port, c10d::Store& server) {
  put(server, live_keys::kFirstGroup, "0,1");
  return Collectives({1, 2, "127.0.0.1", port, /*external_store=*/true}, std::chrono::seconds(30));
}

}  // namespace ppu::testing
