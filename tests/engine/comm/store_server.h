// Test helper: a c10d TCPStore server on loopback at `port`, as rank 0 or ppu-rendezvous serves
// it (no worker count to wait for). Shared by the heartbeat and live-group tests.
#pragma once

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdint>

namespace ppu::testing {

inline c10::intrusive_ptr<c10d::TCPStore> serve_store(int port) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = true;
  opts.waitWorkers = false;
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

}  // namespace ppu::testing
