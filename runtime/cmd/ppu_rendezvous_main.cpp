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
// --probe HOST:PORT asks a running store one request instead (the rendezvous pod's liveness
// check): exit 0 when it answers within --timeout seconds, 1 when it does not (a stopped or
// wedged store still accepts connections, so only a request tells); with --every S it asks every
// S seconds and prints a line per request (cmd/probe_line.h) until its stdout is closed
// (ppu-launch's watch on its store).
// --resize HOST:PORT --ranks K writes an elastic job's desired size into its store (exit 0 once
// written, 1 when the store does not answer within --timeout): the members shrink or take new ranks
// in at their next round boundary (docs/RESIZE.md); ppu-launch runs it on SIGUSR1/SIGUSR2.
// --desired-file PATH, while serving, keeps that key equal to the number in PATH (the operator's
// way: a ConfigMap the kubelet updates in the store's pod).
// Exit codes: 0 stopped by a signal (or, with --probe, the store answered), 2 bad flag, 1 the port
// cannot be served (or, with --probe, the store did not answer).
#include <CLI/CLI.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "cmd/probe_line.h"
#include "core/elastic_size.h"
#include "core/exit_status.h"
#include "core/job_contract.h"
#include "engine/comm/live_store_keys.h"
#include "engine/comm/store_clients.h"

namespace {
// How long the server waits for the rest of a request it began to read. A request's packets are
// sent back to back; a second without one means the client is cut off or stopped. A client
// dropped wrongly only reconnects (BoundedStore).
constexpr std::chrono::milliseconds kRequestGap{1000};

std::string number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

void check_incarnation(c10d::TCPStore& store) { store.check({ppu::contract::kStoreIncarnationKey}); }

// One request (a check of the incarnation key, unless another is given) to the store at
// host:port, on a thread of its own: a store that never answers leaves that thread blocked for good (the caller exits
// or moves on). Returns the line to print: "... answered in N ms" (probe_line::kAnswered), or why not. `request`
// (default: the check) is what is asked; `what` names it in the line.
std::pair<bool, std::string> ask_once(const std::string& host, int port, double timeout_s,
                                      const std::function<void(c10d::TCPStore&)>& request = check_incarnation,
                                      const std::string& what = "--probe") {
  const std::string target = host + ":" + std::to_string(port);
  auto answered = std::make_shared<std::promise<std::string>>();
  auto answer = answered->get_future();
  std::thread([answered, host, port, timeout_s, request] {
    try {
      c10d::TCPStoreOptions opts;
      opts.port = static_cast<std::uint16_t>(port);
      opts.isServer = false;
      opts.waitWorkers = false;
      opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::max(1.0, timeout_s) * 1000));
      c10d::TCPStore client(host, opts);
      request(client);
      answered->set_value("");
    } catch (const std::exception& e) {
      answered->set_value(e.what());
    }
  }).detach();
  const auto start = std::chrono::steady_clock::now();
  const std::string said = "ppu-rendezvous " + what + ": the store at " + target;
  if (answer.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready)
    return {false, said + " did not answer within " + number(timeout_s) + " s"};
  if (const std::string error = answer.get(); !error.empty()) return {false, said + " failed: " + error};
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return {true, said + " " + ppu::probe_line::kAnswered + " " + number(ms) + " ms"};
}

// HOST:PORT as host and port; std::invalid_argument when it is not that.
std::pair<std::string, int> host_port(const std::string& flag, const std::string& target) {
  const auto colon = target.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument(flag + " wants HOST:PORT, got '" + target + "'");
  return {target.substr(0, colon), std::stoi(target.substr(colon + 1))};
}

// --resize: an elastic job's desired size into its store (docs/RESIZE.md); exit 0 once written.
int resize(const std::string& target, int ranks, double timeout_s) {
  const auto [host, port] = host_port("--resize", target);
  const std::string value = std::to_string(ranks);
  const auto [ok, line] = ask_once(
      host, port, timeout_s,
      [value](c10d::TCPStore& store) {
        store.set(ppu::live_keys::kDesiredRanks, std::vector<uint8_t>(value.begin(), value.end()));
      },
      "--resize " + value);
  std::cout << line << std::endl;
  std::_Exit(ok ? 0 : 1);  // a blocked request's thread must not hold the exit
}

// The number in `path` (an elastic job's desired size, the operator's ConfigMap key), or none
// while the file is absent, empty or not a number of ranks (ppu::parse_desired).
std::optional<int> read_size(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ppu::parse_desired(text);
}

// --desired-file: the size in the file into the store now and whenever it changes (a second's
// look), through a client of its own; a file the kubelet rewrites (a ConfigMap volume) included.
void watch_desired_file(const std::string& path, int port) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = false;
  opts.waitWorkers = false;
  auto client = std::make_shared<c10d::TCPStore>("127.0.0.1", opts);
  auto tell = [client](int ranks) {
    const std::string value = std::to_string(ranks);
    client->set(ppu::live_keys::kDesiredRanks, std::vector<uint8_t>(value.begin(), value.end()));
    std::cout << "ppu-rendezvous: the job's desired size is " << value << " ranks" << std::endl;
  };
  std::optional<int> told = read_size(path);
  if (told) tell(*told);  // before the store says it serves: the first group is sized by it
  std::thread([path, tell, told]() mutable {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (const auto now = read_size(path); now && now != told) {
        tell(*now);
        told = now;
      }
    }
  }).detach();
}

// --probe: one request, exit 0 if answered (the rendezvous pod's liveness check); with --every,
// a request every that many seconds (at once after one that got no answer), a line each, until
// the reader goes away (ppu-launch's StoreWatch: LibTorch is loaded once, not once per probe).
int probe(const std::string& target, double timeout_s, double every_s) {
  const auto [host, port] = host_port("--probe", target);
  for (;;) {
    const auto [ok, line] = ask_once(host, port, timeout_s);
    std::cout << line << std::endl;
    if (every_s <= 0) std::_Exit(ok ? 0 : 1);  // a blocked request's thread must not hold the exit
    if (!std::cout) std::_Exit(0);             // the reader is gone (SIGPIPE is ignored)
    if (ok) std::this_thread::sleep_for(std::chrono::duration<double>(every_s));
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-rendezvous: the rendezvous store of a live-recovery PPU job"};
  int port = ppu::contract::kRendezvousPort;
  std::string probe_target;
  double probe_timeout = 5;
  double probe_every = 0;
  std::string resize_target, desired_file;
  int resize_ranks = 0;
  app.add_option("--port", port, "TCP port to serve the store on")->check(CLI::Range(1, 65535));
  app.add_option("--probe", probe_target,
                 "instead of serving: ask the store at HOST:PORT one request, exit 0 if it answers");
  app.add_option("--timeout", probe_timeout, "--probe: seconds to wait for the answer")->check(CLI::PositiveNumber);
  app.add_option("--resize", resize_target,
                 "instead of serving: write an elastic job's desired size (--ranks) into the store at HOST:PORT, "
                 "exit 0 once written (docs/RESIZE.md)");
  app.add_option("--ranks", resize_ranks, "--resize: the desired number of ranks")->check(CLI::PositiveNumber);
  app.add_option("--desired-file", desired_file,
                 "while serving: an elastic job's desired size is the number in this file, written into the store "
                 "at start and whenever it changes (the operator's ConfigMap; docs/RESIZE.md)");
  app.add_option("--every", probe_every,
                 "--probe: ask again every this many seconds, a line per request, until stdout is closed")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ppu::usage_exit_code(app.exit(e));
  }
  if (!resize_target.empty()) {
    if (resize_ranks <= 0) {
      std::cerr << "ppu-rendezvous: --resize needs --ranks K (the desired number of ranks)\n";
      return ppu::contract::exit_code::kConfigError;
    }
    try {
      return resize(resize_target, resize_ranks, probe_timeout);
    } catch (const std::exception& e) {  // a port that is not a number
      std::cerr << "ppu-rendezvous: --resize '" << resize_target << "': " << e.what() << "\n";
      return ppu::contract::exit_code::kConfigError;
    }
  }
  if (!probe_target.empty()) {
    try {
      std::signal(SIGPIPE, SIG_IGN);  // a closed stdout ends a watch through the stream's state
      return probe(probe_target, probe_timeout, probe_every);
    } catch (const std::exception& e) {  // a port that is not a number
      std::cerr << "ppu-rendezvous: --probe '" << probe_target << "': " << e.what() << "\n";
      return ppu::contract::exit_code::kConfigError;
    }
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
    if (!desired_file.empty()) watch_desired_file(desired_file, port);
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
