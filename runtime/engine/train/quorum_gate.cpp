#include "engine/train/quorum_gate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "common/seconds_since.h"
#include "core/quorum_rule.h"
#include "engine/comm/live_store_keys.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;
using live_keys::quorum;

constexpr auto kPoll = std::chrono::milliseconds(5);
constexpr auto kReconnectPatience = std::chrono::milliseconds(500);

// The key an arrived owner of `slice` sets at the sync point after inner step `step`.
std::string slice_key(int64_t step, int slice) { return quorum(step, "slice/" + std::to_string(slice)); }

}  // namespace

std::chrono::milliseconds quorum_request_timeout(const Config& config) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(1.0, config.network.timeout_s) * 1000));
}

QuorumGate::QuorumGate(const Config& config, Collectives& collectives)
    : config_(config),
      col_(collectives),
      store_(collectives, quorum_request_timeout(config), BoundedStore::Connection::Own),
      slices_(config.effective_slices()) {}

QuorumGate::Arrival QuorumGate::arrive(int64_t step, double grace_s) {
  const auto start = Clock::now();
  Arrival arrival;
  try {
    if (store_.lost()) store_.reconnect(kReconnectPatience);
    const int members = col_.world_size();
    const int needed = quorum_size(config_.outer.quorum_fraction, members);
    const std::string arrived_key = quorum(step, "arrived"), closed_key = quorum(step, "closed");
    const int64_t arrived = store_.add(arrived_key, 1);
    store_.set(slice_key(step, col_.job_rank() % slices_), "1");
    std::string decided;
    if (arrived >= members) decided = store_.decide(closed_key, "all");
    // One request a poll: until a quorum arrived only the last arrival can close the sync point
    // (all), which the count shows; after it, the close (by anyone) or the end of the grace window.
    std::optional<Clock::time_point> quorum_at;
    while (decided.empty()) {
      col_.progress().tick();
      if (col_.aborted()) {  // a member was lost: the collective after the gate re-forms the group
        arrival.aborted = true;
        break;
      }
      if (!quorum_at) {
        const int64_t count = store_.add(arrived_key, 0);
        if (count >= members) decided = store_.decide(closed_key, "all");
        else if (count >= needed && slices_covered(step)) quorum_at = Clock::now();
      } else if (store_.check(closed_key) || seconds_since(*quorum_at) >= grace_s) {
        decided = store_.decide(closed_key, "grace");  // if set already: what was decided
      }
      if (decided.empty()) std::this_thread::sleep_for(kPoll);
    }
    arrival.everyone = decided == "all" || arrival.aborted;
  } catch (const StoreLost& e) {
    spdlog::warn("quorum sync at step {}: {}; this sync point closes when every member arrives", step, e.what());
    arrival.store_lost = true;
  }
  arrival.wait_s = seconds_since(start);
  return arrival;
}

void QuorumGate::publish_plan(int64_t step, const std::string& plan) {
  // "" is a plan (nobody sits out), stored as "-": a key set to nothing reads as unset.
  store_.set(quorum(step, "plan"), plan.empty() ? "-" : plan);
}

std::string QuorumGate::plan(int64_t step) {
  if (store_.lost()) store_.reconnect(kReconnectPatience);
  const std::string key = quorum(step, "plan");
  while (!store_.check(key)) {
    col_.progress().tick();
    std::this_thread::sleep_for(kPoll);
  }
  const std::string plan = store_.get(key);
  return plan == "-" ? "" : plan;
}

bool QuorumGate::slices_covered(int64_t step) {
  // An arrived owner of every slice that has a member: each such slice's key is set.
  std::vector<bool> owned(slices_, false);
  for (int r : col_.members()) owned[r % slices_] = true;
  std::vector<std::string> keys;
  for (int s = 0; s < slices_; ++s)
    if (owned[s]) keys.push_back(slice_key(step, s));
  return store_.check_all(keys);
}

}  // namespace ppu
