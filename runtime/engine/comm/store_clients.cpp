#include "engine/comm/store_clients.h"

#include <unistd.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cerrno>
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
