#include "engine/comm/live_group.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <thread>

#include "core/exit_status.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

std::string text(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }
std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> ranks;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) ranks.push_back(std::stoi(item));
  return ranks;
}

bool contains(const std::vector<int>& ranks, int r) { return std::find(ranks.begin(), ranks.end(), r) != ranks.end(); }

// The value `key` ends up with: `proposal` if it was unset, else what another rank set first.
std::string decide(c10d::Store& store, const std::string& key, const std::string& proposal) {
  return text(store.compareSet(key, {}, bytes(proposal)));
}

constexpr const char* kJoins = "live/joins";
constexpr const char* kDone = "live/done";

}  // namespace

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

LiveGroup::LiveGroup(Collectives& collectives, IsSilent silent)
    : col_(collectives), silent_(std::move(silent)), patience_(collectives.timeout()) {
  // The first group of the job has formed: from now on a starting process is a replacement.
  if (!col_.joining()) decide(*col_.store(), key(0, "members"), ranks_text(col_.members()));
  // A member that re-forms the group ends the collectives the others are still waiting in
  // (one may be waiting on a survivor that has already given up on it).
  col_.set_abort_probe([this] {
    const int64_t next = generation_ + 1;
    return col_.store()->check({key(next, "reforming")})
               ? "a member began re-forming the group as generation " + std::to_string(next)
               : std::string();
  });
}

std::string LiveGroup::key(int64_t generation, const std::string& name) const {
  return "live/g" + std::to_string(generation) + "/" + name;
}

bool LiveGroup::commit(bool done) {
  const ProgressClock::Waiting on_members(col_.progress());
  auto& store = *col_.store();
  const std::string base = key(generation_, "x" + std::to_string(exchange_++) + "/");
  const std::string outcome = base + "outcome";
  if (!done) return decide(store, outcome, "abort") == "commit";
  const auto members = static_cast<int64_t>(col_.members().size());
  store.add(base + "done", 1);
  const auto deadline = Clock::now() + col_.timeout();
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    if (store.add(base + "done", 0) >= members) return decide(store, outcome, "commit") == "commit";
    if (store.check({outcome})) return text(store.get(outcome)) == "commit";
    if (col_.aborted() || Clock::now() > deadline) return decide(store, outcome, "abort") == "commit";
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

std::vector<int> LiveGroup::join_requests(int64_t upto) const {
  std::vector<int> ranks;
  for (int64_t i = joins_seen_ + 1; i <= upto; ++i)
    ranks.push_back(std::stoi(text(col_.store()->get("live/join/" + std::to_string(i)))));
  return ranks;
}

std::vector<int> LiveGroup::recover() {
  const ProgressClock::Waiting on_members(col_.progress());
  auto& store = *col_.store();
  const std::vector<int> before = col_.members();
  const int64_t next = generation_ + 1;
  const std::string members_key = key(next, "members");
  if (!store.check({members_key})) {
    store.set(key(next, "reforming"), bytes("1"));
    store.set(key(next, "arrived/" + std::to_string(col_.job_rank())), bytes("1"));
    const auto deadline = Clock::now() + patience_;
    while (!store.check({members_key})) {
      const auto requests = join_requests(store.add(kJoins, 0));
      const std::set<int> rejoining(requests.begin(), requests.end());
      std::vector<int> arrived, waiting;
      for (int r : before) {
        if (store.check({key(next, "arrived/" + std::to_string(r))})) arrived.push_back(r);
        else if (!silent_(r) && !rejoining.count(r)) waiting.push_back(r);
      }
      // Past the patience the members that neither came nor fell silent are left out too: they
      // find the generation formed without them (OutOfGroup) and are replaced.
      if (waiting.empty() || Clock::now() > deadline) {
        decide(store, members_key, ranks_text(arrived));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  form(next, before);
  std::vector<int> lost;
  for (int r : before)
    if (!contains(col_.members(), r)) lost.push_back(r);
  return lost;
}

void LiveGroup::form(int64_t next, const std::vector<int>& before) {
  auto& store = *col_.store();
  const auto members = parse_list(text(store.get(key(next, "members"))));
  if (!contains(members, col_.job_rank()))
    throw OutOfGroup("generation " + std::to_string(next) + " of the live group was formed without rank " +
                     std::to_string(col_.job_rank()) + " (members " + ranks_text(members) + ")");
  // Newcomers take their state from the lowest member that was in the group before.
  int source = -1;
  for (int r : members)
    if (contains(before, r)) {
      source = r;
      break;
    }
  if (source >= 0) source_ = std::stoi(decide(store, key(next, "source"), std::to_string(source)));
  newcomers_.clear();
  for (int r : members)
    if (!contains(before, r)) newcomers_.push_back(r);
  // Past this generation even if forming it fails: a later recovery moves on from it.
  generation_ = next;
  exchange_ = 0;
  col_.reform(members, next);
}

std::vector<int> LiveGroup::pending_joiners() {
  const auto counts = col_.allgather(torch::tensor({col_.store()->add(kJoins, 0)}, torch::kInt64));
  int64_t agreed = 0;
  for (const auto& c : counts) agreed = std::max(agreed, c.item<int64_t>());
  std::vector<int> joiners;
  for (int r : join_requests(agreed)) {
    if (contains(col_.members(), r)) break;  // its old process is still a member: after the recovery
    if (!contains(joiners, r)) joiners.push_back(r);
  }
  return joiners;
}

std::vector<int> LiveGroup::admit(const std::vector<int>& joiners) {
  auto& store = *col_.store();
  const std::vector<int> before = col_.members();
  // The requests taken in: up to the first that stands for a member (see pending_joiners).
  int64_t upto = joins_seen_;
  for (int r : join_requests(store.add(kJoins, 0))) {
    if (!contains(joiners, r)) break;
    ++upto;
  }
  std::vector<int> proposal = before;
  for (int r : joiners)
    if (!contains(proposal, r)) proposal.push_back(r);
  std::sort(proposal.begin(), proposal.end());
  const int64_t next = generation_ + 1;
  store.set(key(next, "joins"), bytes(std::to_string(upto)));
  decide(store, key(next, "members"), ranks_text(proposal));
  form(next, before);
  if (!newcomers_.empty()) joins_seen_ = upto;
  return newcomers_;
}

bool LiveGroup::join() {
  const ProgressClock::Waiting on_group(col_.progress());  // until the next round boundary
  auto& store = *col_.store();
  const int me = col_.job_rank();
  const int64_t request = store.add(kJoins, 1);
  store.set("live/join/" + std::to_string(request), bytes(std::to_string(me)));
  for (;;) {
    if (store.check({kDone})) {
      finished_result_ = text(store.get(kDone));
      return false;
    }
    while (store.check({key(generation_ + 1, "members")})) ++generation_;
    // A generation takes this process in when it lists this rank and admitted its request.
    const std::string joins = key(generation_, "joins");
    if (store.check({joins}) && std::stoll(text(store.get(joins))) >= request) {
      const auto members = parse_list(text(store.get(key(generation_, "members"))));
      if (contains(members, me)) {
        joins_seen_ = std::stoll(text(store.get(joins)));
        source_ = std::stoi(text(store.get(key(generation_, "source"))));
        col_.reform(members, generation_);
        exchange_ = 0;
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void LiveGroup::finish(const std::string& result) { col_.store()->set(kDone, bytes(result)); }

}  // namespace ppu
