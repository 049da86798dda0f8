#include "engine/train/quorum_gate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "common/seconds_since.h"
#include "core/quorum_rule.h"
#include "engine/comm/live_store_keys.h"
#include "engine/comm/reach_probe.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;
using live_keys::quorum;

constexpr auto kPoll = std::chrono::milliseconds(5);
constexpr auto kReconnectPatience = std::chrono::milliseconds(500);

// The key an arrived owner of `slice` sets at the sync point after inner step `step`.
std::string slice_key(int64_t step, int slice) { return quorum(step, "slice/" + std::to_string(slice)); }
// The key job rank `rank` sets there when the gate fences at the close (ask_missing_with).
std::string rank_key(int64_t step, int rank) { return quorum(step, "at/" + std::to_string(rank)); }
// The key job rank `rank` sets when it had a notice while it sat out (say_notice).
std::string notice_key(int rank) { return live_keys::quorum_run("notice/" + std::to_string(rank)); }

// How long a member not arrived has to answer: the grace window, within these bounds (a
// process that runs answers in a scheduling delay; a throttled one in its next CFS period).
constexpr double kAnswerMinS = 0.25, kAnswerMaxS = 1.0;
// A member that did not answer in that window is asked once more, for this long, before it is
// fenced: a process throttled by a CPU quota (a few ms each 100 ms period) may miss a short
// window; a stopped one misses any.
constexpr auto kSecondChance = std::chrono::seconds(1);

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
    reconnect_if_lost();
    const int members = col_.world_size();
    const int needed = quorum_size(config_.outer.quorum_fraction, members);
    const std::string arrived_key = quorum(step, "arrived"), closed_key = quorum(step, "closed");
    const int64_t arrived = store_.add(arrived_key, 1);
    store_.set(slice_key(step, col_.job_rank() % slices_), "1");
    if (addresses_) store_.set(rank_key(step, col_.job_rank()), "1");
    std::string decided;
    std::optional<Asked> asked;  // the members missing once the quorum arrived, and their answers
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
        else if (count >= needed && slices_covered(step)) {
          quorum_at = Clock::now();
          if (addresses_) asked = ask_missing(step, grace_s);
        }
      } else if (store_.check(closed_key) || seconds_since(*quorum_at) >= grace_s) {
        decided = store_.decide(closed_key, "grace");  // if set already: what was decided
      }
      if (decided.empty()) std::this_thread::sleep_for(kPoll);
    }
    arrival.everyone = decided == "all" || arrival.aborted;
    if (!arrival.everyone && asked) arrival.unanswering = unanswering(step, *asked);
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

std::optional<std::string> QuorumGate::plan(int64_t step) {
  reconnect_if_lost();
  const std::string key = quorum(step, "plan");
  while (!store_.check(key)) {
    if (job_stopped()) return std::nullopt;
    col_.progress().tick();
    std::this_thread::sleep_for(kPoll);
  }
  const std::string plan = store_.get(key);
  return plan == "-" ? "" : plan;
}

std::optional<QuorumGate::Asked> QuorumGate::ask_missing(int64_t step, double grace_s) {
  Asked asked;
  asked.ranks = not_arrived(step, col_.members());
  const auto addresses = addresses_();
  std::vector<std::string> where;
  for (auto it = asked.ranks.begin(); it != asked.ranks.end();) {
    const auto found = addresses.find(*it);
    if (found == addresses.end()) {  // no address to ask: the heartbeat's to judge
      it = asked.ranks.erase(it);
      continue;
    }
    where.push_back(found->second);
    ++it;
  }
  if (asked.ranks.empty()) return std::nullopt;
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::clamp(grace_s, kAnswerMinS, kAnswerMaxS) * 1000));
  asked.addresses = where;
  asked.answers = std::async(std::launch::async, [where, timeout] { return processes_answer(where, timeout); });
  return asked;
}

std::vector<int> QuorumGate::unanswering(int64_t step, Asked& asked) {
  const std::vector<bool> answers = asked.answers.get();
  std::vector<int> silent;
  std::vector<std::string> again;
  for (size_t i = 0; i < asked.ranks.size(); ++i)
    if (!answers[i]) {
      silent.push_back(asked.ranks[i]);
      again.push_back(asked.addresses[i]);
    }
  if (silent.empty()) return silent;
  const std::vector<bool> second = processes_answer(again, kSecondChance);
  std::vector<int> gone;
  for (size_t i = 0; i < silent.size(); ++i)
    if (!second[i]) gone.push_back(silent[i]);
  return gone.empty() ? gone : not_arrived(step, gone);  // one may have arrived meanwhile
}

std::vector<int> QuorumGate::not_arrived(int64_t step, const std::vector<int>& ranks) {
  std::vector<int> missing;
  for (int r : ranks)
    if (r != col_.job_rank() && !store_.check(rank_key(step, r))) missing.push_back(r);
  return missing;
}

void QuorumGate::say_notice() {
  reconnect_if_lost();
  store_.set(notice_key(col_.job_rank()), "1");
}

std::vector<int> QuorumGate::noticed(const std::vector<int>& ranks) {
  reconnect_if_lost();
  std::vector<int> said;
  for (int r : ranks)
    if (store_.check(notice_key(r))) said.push_back(r);
  return said;
}

void QuorumGate::say_job_stopped() {
  reconnect_if_lost();
  store_.set(live_keys::quorum_run("stopped"), "1");
}

bool QuorumGate::job_stopped() {
  reconnect_if_lost();
  return store_.check(live_keys::quorum_run("stopped"));
}

void QuorumGate::reconnect_if_lost() {
  if (store_.lost()) store_.reconnect(kReconnectPatience);
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
