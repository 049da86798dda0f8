#include "engine/comm/bounded_store.h"

#include <spdlog/fmt/fmt.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/job_contract.h"
#include "engine/comm/store_clients.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

std::string seconds_text(std::chrono::milliseconds d) { return fmt::format("{:.1f} s", d.count() / 1000.0); }

}  // namespace

BoundedStore::BoundedStore(Collectives& collectives, std::chrono::milliseconds request_timeout, Connection connection)
    : col_(collectives),
      request_timeout_(request_timeout),
      connection_(connection),
      lost_(connection == Connection::Own) {}

BoundedStore::~BoundedStore() {
  if (own_) retire_store_client(std::move(own_));  // a request abandoned at its timeout may still hold it
}

template <class R, class Request>
R BoundedStore::ask(const char* what, Request request) {
  if (lost_) throw StoreLost(std::string("store request '") + what + "' not sent: the connection to the store is lost");
  struct Answer {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<R> value;
    std::string error;
  };
  ++requests_;
  auto answer = std::make_shared<Answer>();
  // The thread owns the connection and the request (by value): it may outlive this call.
  std::thread([answer, store = connection_ == Connection::Own ? own_ : col_.store(), request] {
    std::optional<R> value;
    std::string error;
    try {
      value.emplace(request(*store));
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
    std::lock_guard<std::mutex> lock(answer->mutex);
    answer->value = std::move(value);
    answer->error = std::move(error);
    answer->done = true;
    answer->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(answer->mutex);
  if (!answer->done_cv.wait_for(lock, request_timeout_, [&] { return answer->done; })) {
    lost_ = true;
    throw StoreLost(std::string("the rendezvous store did not answer '") + what + "' within " +
                    seconds_text(request_timeout_));
  }
  if (!answer->value) {
    lost_ = true;
    std::string msg = answer->error;
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw StoreLost(std::string("the rendezvous store failed '") + what + "': " + msg);
  }
  return std::move(*answer->value);
}

int64_t BoundedStore::add(const std::string& key, int64_t delta) {
  return ask<int64_t>("add", [key, delta](c10d::Store& s) { return s.add(key, delta); });
}

bool BoundedStore::check(const std::string& key) {
  return ask<bool>("check", [key](c10d::Store& s) { return s.check({key}); });
}

bool BoundedStore::check_all(const std::vector<std::string>& keys) {
  return ask<bool>("check", [keys](c10d::Store& s) { return s.check(keys); });
}

std::string BoundedStore::get(const std::string& key) {
  return ask<std::string>("get", [key](c10d::Store& s) { return text(s.get(key)); });
}

void BoundedStore::set(const std::string& key, const std::string& value) {
  ask<bool>("set", [key, value](c10d::Store& s) {
    s.set(key, bytes(value));
    return true;
  });
}

std::string BoundedStore::decide(const std::string& key, const std::string& proposal) {
  return ask<std::string>("compare-set",
                          [key, proposal](c10d::Store& s) { return text(s.compareSet(key, {}, bytes(proposal))); });
}

std::string BoundedStore::incarnation() {
  const std::string key = contract::kStoreIncarnationKey;
  return check(key) ? get(key) : std::string();
}

std::string BoundedStore::reconnect(std::chrono::milliseconds patience) {
  const auto deadline = Clock::now() + patience;
  std::string last = "no attempt";
  for (;;) {
    try {
      if (connection_ == Connection::Shared) {
        col_.reconnect_store();
      } else {
        auto fresh = col_.connect_store();
        if (own_) retire_store_client(std::exchange(own_, fresh));
        else own_ = fresh;
      }
      lost_ = false;
      return incarnation();
    } catch (const PeerError& e) {  // StoreLost included
      last = e.what();
    }
    if (Clock::now() > deadline)
      throw StoreLost("the rendezvous store did not come back within " + seconds_text(patience) + " (" + last + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace ppu
