// Test helper: a c10d TCPStore server on loopback at `port`, as rank 0 or ppu-rendezvous serves
// it (no worker count to wait for), and a client of it. Shared by the heartbeat, live-group and
// store-client tests.
#pragma once

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdint>

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

}  // namespace ppu::testing
