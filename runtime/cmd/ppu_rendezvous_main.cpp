// ppu-rendezvous: the rendezvous store of a live-recovery job (network.recovery=live), served
// outside the ranks so that it outlives any of them, rank 0 included: c10d's TCPStore server on
// --port until SIGTERM or SIGINT. ppu-launch runs one per job on this machine; the operator
// runs one per job in its own pod behind a Service. Ranks reach it at MASTER_ADDR:MASTER_PORT
// with PPU_EXTERNAL_STORE=1 (core/job_contract.h). It holds only small keys (membership,
// heartbeats, Gloo's addresses); the tensors go between the ranks. Its keys live in memory only:
// each start writes a new incarnation (contract::kStoreIncarnationKey) before it says it serves,
// so ranks that reconnect after a restart know the keys are gone and rebuild them (LiveGroup).
// A client that stops sending in the middle of a request (cut off, stopped) is dropped after
// kRequestGap instead of holding every other client's requests (store_clients.h).
// Exit codes: 0 stopped by a signal, 2 bad flag, 1 the port cannot be served.
#include <CLI/CLI.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>

#include "core/exit_status.h"
#include "core/job_contract.h"
#include "engine/comm/store_clients.h"

namespace {
// How long the server waits for the rest of a request it began to read. A request's packets are
// sent back to back; a second without one means the client is cut off or stopped. A client
// dropped wrongly only reconnects (BoundedStore).
constexpr std::chrono::milliseconds kRequestGap{1000};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-rendezvous: the rendezvous store of a live-recovery PPU job"};
  int port = ppu::contract::kRendezvousPort;
  app.add_option("--port", port, "TCP port to serve the store on")->check(CLI::Range(1, 65535));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ppu::usage_exit_code(app.exit(e));
  }
  // The signals are waited for, not handled: block them before the store's threads start.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a rank that dies mid-request must not stop the store
  try {
    ppu::bound_reads_of_served_connections(port, kRequestGap);
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(port);
    opts.isServer = true;
    opts.waitWorkers = false;
    c10d::TCPStore store("0.0.0.0", opts);
    // This start's incarnation, through a client of its own (the server object serves only).
    c10d::TCPStoreOptions client_opts;
    client_opts.port = opts.port;
    client_opts.isServer = false;
    client_opts.waitWorkers = false;
    c10d::TCPStore client("127.0.0.1", client_opts);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const std::string incarnation = std::to_string(getpid()) + "-" +
                                    std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    client.set(ppu::contract::kStoreIncarnationKey, std::vector<uint8_t>(incarnation.begin(), incarnation.end()));
    std::cout << "ppu-rendezvous: serving the store on port " << port << " (incarnation " << incarnation << ")"
              << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    std::cout << "ppu-rendezvous: stopped by signal " << sig << std::endl;
  } catch (const std::exception& e) {
    const auto status = ppu::exit_status_of(e);
    std::cerr << "ppu-rendezvous: " << status.message << std::endl;
    return status.code;
  }
  return 0;
}
