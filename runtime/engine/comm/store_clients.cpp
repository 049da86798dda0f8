#include "engine/comm/store_clients.h"

#include <dlfcn.h>
#include <sys/socket.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace ppu {

namespace {

std::terminate_handler g_previous = nullptr;
std::thread::id g_main;

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

void retire_store_client(c10::intrusive_ptr<c10d::Store> client) {
  static std::mutex mutex;
  static auto* retired = new std::vector<c10::intrusive_ptr<c10d::Store>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  retired->push_back(std::move(client));
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
// (it reads its control pipe first). Every other call is passed through unchanged. LibTorch 2's
// client has no watcher; there this path is never taken.
// NOLINTNEXTLINE(readability-inconsistent-declaration-parameter-name): libc names them __fd, __buf, ...
extern "C" ssize_t recv(int fd, void* buf, size_t len, int flags) {
  using Recv = ssize_t (*)(int, void*, size_t, int);
  static const auto next = reinterpret_cast<Recv>(dlsym(RTLD_NEXT, "recv"));  // NOLINT: dlsym's type
  const ssize_t got = next(fd, buf, len, flags);
  if (got == 0 && len == 1 && (flags & MSG_PEEK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return got;
}
