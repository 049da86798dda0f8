// Test helper: a c10d TCPStore server on loopback at `port`, as rank 0 or ppu-rendezvous serves
// it (no worker count to wait for), and a client of it. Shared by the heartbeat, live-group and
// store-client tests.
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

inline c10::intrusive_ptr<c10d::TCPStore> connect_to_store(int port) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = false;
  opts.waitWorkers = false;
  return c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
}

}  // namespace ppu::testing
