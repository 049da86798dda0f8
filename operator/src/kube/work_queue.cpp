#include "kube/work_queue.h"

#include <algorithm>
#include <cmath>

namespace ppu::op {

WorkQueue::WorkQueue(double base, double max) : base_(base), max_(max) {}

void WorkQueue::add(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  if (shutdown_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (!processing_.count(key)) queue_.push_back(key);  // else done() re-queues it
  cv_.notify_one();
}

void WorkQueue::add_after(const std::string& key, double delay_s) {
  if (delay_s <= 0) return add(key);
  std::lock_guard<std::mutex> l(mu_);
  if (shutdown_) return;
  auto when = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay_s));
  // Keep only the earliest pending timer per key so the map stays small under churn.
  for (auto it = delayed_.begin(); it != delayed_.end(); ++it) {
    if (it->second != key) continue;
    if (it->first <= when) return;
    delayed_.erase(it);
    break;
  }
  delayed_.emplace(when, key);
  cv_.notify_one();
}

double WorkQueue::next_delay(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = failures_.find(key);
  int n = it == failures_.end() ? 0 : it->second;
  return std::min(max_, base_ * std::pow(2.0, n));
}

void WorkQueue::add_rate_limited(const std::string& key) {
  double d = next_delay(key);
  {
    std::lock_guard<std::mutex> l(mu_);
    failures_[key]++;
  }
  add_after(key, d);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  failures_.erase(key);
}

int WorkQueue::retries(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::promote_due_locked() {
  auto now = Clock::now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    if (dirty_.count(key)) continue;
    dirty_.insert(key);
    if (!processing_.count(key)) queue_.push_back(key);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    if (shutdown_) return std::nullopt;
    promote_due_locked();
    if (!queue_.empty()) break;
    if (delayed_.empty()) {
      cv_.wait(l);
    } else {
      // A copy: wait_until re-reads its deadline after waking, by which time another thread
      // may have erased that timer (add_after keeps one per key).
      const Clock::time_point deadline = delayed_.begin()->first;
      cv_.wait_until(l, deadline);
    }
  }
  std::string key = queue_.front();
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  processing_.erase(key);
  if (dirty_.count(key)) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shutdown() {
  std::lock_guard<std::mutex> l(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

size_t WorkQueue::depth() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size();
}

}  // namespace ppu::op
