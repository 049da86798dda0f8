// WorkQueue: keys to reconcile, client-go style. A key is queued at most once however often it
// is added; a key being processed is never handed to a second worker (it is re-queued when
// done() is called if it was added meanwhile). add_rate_limited() retries a failing key with
// per-key exponential back-off (base * 2^failures, capped); forget() resets it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace ppu::op {

class WorkQueue {
 public:
  explicit WorkQueue(double base_delay_s = 0.005, double max_delay_s = 60);

  void add(const std::string& key);
  void add_after(const std::string& key, double delay_s);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  int retries(const std::string& key) const;
  double next_delay(const std::string& key) const;  // what add_rate_limited would wait now

  // Blocks until a key is ready; nullopt once shut down.
  std::optional<std::string> get();
  void done(const std::string& key);
  void shutdown();
  size_t depth() const;  // keys ready to be processed

 private:
  using Clock = std::chrono::steady_clock;
  void promote_due_locked();

  double base_, max_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_, processing_;
  std::multimap<Clock::time_point, std::string> delayed_;
  std::map<std::string, int> failures_;
  bool shutdown_ = false;
};

}  // namespace ppu::op
