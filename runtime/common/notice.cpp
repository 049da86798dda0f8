#include "common/notice.h"

#include <unistd.h>
#include <ctime>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <thread>
#include <utility>

namespace ppu {

namespace {

std::atomic<int> g_scopes{0};          // NoticeScopes alive: > 0 defers a notice
std::atomic<int> g_signal{0};          // the recorded notice's signal
std::atomic<int64_t> g_noticed_ns{0};  // CLOCK_MONOTONIC at the notice
double g_bound_s = 0;
std::function<void(double)> g_on_overrun;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe (POSIX)
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void on_signal(int sig) {
  // A second signal, or one outside the training loop: leave now. (SIGTERM and SIGINT are
  // masked during the handler: the two cannot interleave.)
  if (g_scopes.load() == 0 || g_signal.load() != 0) _exit(128 + sig);
  g_noticed_ns.store(monotonic_ns());  // before the signal: the watch reads them in that order
  g_signal.store(sig);
}

void watch_bound() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int sig = g_signal.load();
    if (sig == 0) continue;
    const double seconds = seconds_since_notice();
    if (seconds < g_bound_s) continue;
    if (g_on_overrun) g_on_overrun(seconds);
    _exit(128 + sig);
  }
}

}  // namespace

void install_notice_handler(double bound_s, std::function<void(double seconds)> on_overrun) {
  g_bound_s = bound_s;
  g_on_overrun = std::move(on_overrun);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::thread(watch_bound).detach();
}

NoticeScope::NoticeScope() { g_scopes.fetch_add(1); }
NoticeScope::~NoticeScope() { g_scopes.fetch_sub(1); }

bool notice_received() { return g_signal.load() != 0; }
int notice_signal() { return g_signal.load(); }

double seconds_since_notice() {
  if (g_signal.load() == 0) return 0;
  return static_cast<double>(monotonic_ns() - g_noticed_ns.load()) / 1e9;
}

}  // namespace ppu
