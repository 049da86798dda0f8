// BoundedStore: the rendezvous store as the live path asks it — no request waits longer than
// `request_timeout`, and a store that died, restarted or cannot be reached surfaces as StoreLost
// instead of a hang (a TCPStore read on a stopped host never returns by itself).
//
// Contracts:
//  - add/check/get/set/decide run the request on a helper thread and wait at most the request
//    timeout. A failed or unanswered request throws StoreLost and marks the connection lost:
//    every later request throws StoreLost at once, without waiting, until reconnect().
//  - reconnect() opens a new connection (Collectives::reconnect_store) and reads the store's
//    incarnation (contract::kStoreIncarnationKey), retrying until `patience` has passed; it
//    returns the incarnation, or throws StoreLost when the store did not come back in time.
//    A different incarnation than before means the store restarted and lost every key.
//  - A request abandoned at its timeout keeps running on its thread against the old connection
//    (it holds that connection; reconnect() never reuses it).
//  - Connection::Shared asks through the rank's shared connection (Collectives::store), and
//    reconnect() replaces that one. Connection::Own keeps a connection of its own, which
//    reconnect() opens (Collectives::connect_store): it is lost until then.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/comm/collectives.h"

namespace ppu {

// The store did not answer in time, failed, or the connection to it is lost.
class StoreLost : public PeerError {
 public:
  using PeerError::PeerError;
};

class BoundedStore {
 public:
  enum class Connection { Shared, Own };
  BoundedStore(Collectives& collectives, std::chrono::milliseconds request_timeout,
               Connection connection = Connection::Shared);
  ~BoundedStore();
  BoundedStore(const BoundedStore&) = delete;
  BoundedStore& operator=(const BoundedStore&) = delete;

  void set_request_timeout(std::chrono::milliseconds timeout) { request_timeout_ = timeout; }
  std::chrono::milliseconds request_timeout() const { return request_timeout_; }

  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::string& key);
  bool check_all(const std::vector<std::string>& keys);  // one request: whether every key is set
  std::string get(const std::string& key);               // waits for the key on the store's side, bounded here
  void set(const std::string& key, const std::string& value);
  // The value `key` ends up with: `proposal` if it was unset, else what another rank set first.
  std::string decide(const std::string& key, const std::string& proposal);

  // Requests sent so far (answered or not).
  int64_t requests() const { return requests_; }

  // Whether the last request failed (requests throw at once until reconnect()).
  bool lost() const { return lost_; }
  // A new connection and the store's incarnation (see above).
  std::string reconnect(std::chrono::milliseconds patience);
  // The incarnation read at the last reconnect() or incarnation() ("" before).
  std::string incarnation();

 private:
  template <class R, class Request>
  R ask(const char* what, Request request);

  Collectives& col_;
  std::chrono::milliseconds request_timeout_;
  Connection connection_;
  c10::intrusive_ptr<c10d::Store> own_;  // Connection::Own's, once reconnect() opened it
  std::atomic<bool> lost_{false};
  std::atomic<int64_t> requests_{0};
};

}  // namespace ppu
