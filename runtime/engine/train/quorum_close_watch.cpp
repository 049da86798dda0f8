#include "engine/train/quorum_close_watch.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "engine/comm/live_store_keys.h"
#include "engine/train/quorum_gate.h"

namespace ppu {

namespace {

constexpr auto kReconnectEvery = std::chrono::milliseconds(500);

}  // namespace

QuorumCloseWatch::QuorumCloseWatch(const Config& config, Collectives& collectives)
    : store_(collectives, quorum_request_timeout(config), BoundedStore::Connection::Own), thread_([this] { run(); }) {}

QuorumCloseWatch::~QuorumCloseWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  asked_cv_.notify_all();
  thread_.join();
  spdlog::info("quorum sync: {} store request(s) asked whether a sync point had closed", requests_);
}

void QuorumCloseWatch::ask(int64_t step, bool wait) {
  if (closed(step)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  asked_ = step;
  const int64_t mine = ++asks_;
  asked_cv_.notify_one();
  // The thread's lookup is bounded by the request timeout (at most 1 s), a reconnect by 2 s more.
  if (wait) answered_cv_.wait_for(lock, std::chrono::seconds(3), [&] { return answered_ >= mine; });
}

void QuorumCloseWatch::run() {
  for (;;) {
    int64_t step = -1, serving = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      asked_cv_.wait(lock, [this] { return stop_ || asked_ >= 0; });
      if (stop_) return;
      step = std::exchange(asked_, -1);
      serving = asks_;
    }
    lookup(step);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      answered_ = serving;
    }
    answered_cv_.notify_all();
  }
}

// One answer: whether sync point `step` has closed, as the store says now (nothing when it does
// not answer: not closed as far as this rank can tell, it trains on and the gate closes as
// under all).
void QuorumCloseWatch::lookup(int64_t step) {
  if (closed(step)) return;
  try {
    if (store_.lost()) {
      const auto now = std::chrono::steady_clock::now();
      if (now < next_connect_) return;  // asked again at the next step
      next_connect_ = now + kReconnectEvery;
      store_.reconnect(std::chrono::milliseconds(0));
    }
    ++requests_;
    if (!store_.check(live_keys::quorum(step, "closed"))) return;
    int64_t seen = closed_.load();
    while (seen < step && !closed_.compare_exchange_weak(seen, step)) {
    }
  } catch (const StoreLost&) {
  }
}

}  // namespace ppu
