#include "engine/comm/store_clients.h"

#include <dlfcn.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace ppu {

namespace {

std::terminate_handler g_previous = nullptr;
std::thread::id g_main;
std::atomic<int> g_served_port{0};  // bound_reads_of_served_connections: 0 = none
std::atomic<int> g_served_read_ms{0};

// Whether `fd` is a connection accepted on the served port (a client's own socket has an
// ephemeral local port).
bool accepted_on_served_port(int fd, int port) {
  sockaddr_storage local{};
  socklen_t size = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) != 0) return false;  // NOLINT: the sockets API
  if (local.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port) == port;     // NOLINT
  if (local.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port) == port;  // NOLINT
  return false;
}

bool lost_connection(const std::system_error& e) {
  const int code = e.code().value();
  return code == ECONNRESET || code == ECONNABORTED || code == EPIPE || code == ENOTCONN;
}

[[noreturn]] void park_or_terminate() {
  if (std::this_thread::get_id() != g_main)
    if (auto error = std::current_exception()) {
      bool park = false;
      try {
        std::rethrow_exception(error);
      } catch (const std::system_error& e) {
        park = lost_connection(e);
      } catch (...) {
      }
      if (park) {
        static constexpr char kNote[] =
            "ppu: a store client's watcher thread lost its store (the store died); parked, the rank goes on\n";
        [[maybe_unused]] auto n = write(STDERR_FILENO, kNote, sizeof kNote - 1);
        for (;;) pause();
      }
    }
  if (g_previous) g_previous();
  std::abort();
}

}  // namespace

void keep_ranks_alive_when_the_store_dies() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_main = std::this_thread::get_id();
    g_previous = std::set_terminate(park_or_terminate);
  });
}

void bound_reads_of_served_connections(int port, std::chrono::milliseconds bound) {
  g_served_read_ms = static_cast<int>(bound.count());
  g_served_port = port;
}

void retire_store_client(c10::intrusive_ptr<c10d::Store>&& client) {
  std::thread([c = std::move(client)]() mutable { c.reset(); }).detach();
}

}  // namespace ppu

// LibTorch 1.13's watcher loop (TCPStoreWorkerDaemon::run) polls its client's socket and peeks one
// byte; once the store has closed the connection (it died or restarted), the peek returns 0 and
// the loop polls again at once. Every client of a dead store then spins a core for the rest of the
// process: a rank holds two (its heartbeat's and its collectives'), and the chaos bench measured
// training at a third of its speed after one store restart. The dynamic linker binds LibTorch's
// calls of recv to this definition (an executable's symbols come first), which sleeps 50 ms on
// exactly that event, a one-byte peek that finds the end of the stream: the watcher then wakes
// 20 times a second instead of spinning, and still stops within 50 ms when its client is destroyed
// (it reads its control pipe first). LibTorch 2's client has no watcher; there this path is never
// taken. The same definition bounds the store server's reads once
// bound_reads_of_served_connections was called (store_clients.h). Every other call is passed
// through unchanged.
// NOLINTNEXTLINE(readability-inconsistent-declaration-parameter-name): libc names them __fd, __buf, ...
extern "C" ssize_t recv(int fd, void* buf, size_t len, int flags) {
  using Recv = ssize_t (*)(int, void*, size_t, int);
  static const auto next = reinterpret_cast<Recv>(dlsym(RTLD_NEXT, "recv"));  // NOLINT: dlsym's type
  // The store's server reading a request (bound_reads_of_served_connections).
  if (const int port = ppu::g_served_port.load();
      port != 0 && (flags & MSG_PEEK) == 0 && ppu::accepted_on_served_port(fd, port)) {
    pollfd wait{fd, POLLIN, 0};
    const int ready = poll(&wait, 1, ppu::g_served_read_ms.load());
    if (ready == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
  }
  const ssize_t got = next(fd, buf, len, flags);
  if (got == 0 && len == 1 && (flags & MSG_PEEK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return got;
}
