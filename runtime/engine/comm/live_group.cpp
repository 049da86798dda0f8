#include "engine/comm/live_group.h"

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/elastic_size.h"
#include "core/exit_status.h"
#include "engine/comm/beat_board.h"
#include "engine/comm/live_store_keys.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

// How long a probe of a reach address waits: a host that answers does within milliseconds.
constexpr std::chrono::milliseconds kReachTimeout{500};
// The same when it only names a lost rank's fault (fault_kinds): the survivors wait for it before
// they train again, and a rank that answers later than this is only named "unreachable" instead of
// "stopped" (the kernel of a host that is up completes the connect within a round trip).
constexpr std::chrono::milliseconds kNamingReachTimeout{100};

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> ranks;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) ranks.push_back(std::stoi(item));
  return ranks;
}

}  // namespace

bool contains(const std::vector<int>& ranks, int r) { return std::find(ranks.begin(), ranks.end(), r) != ranks.end(); }

// A member's account as announcer() writes it.
struct LiveGroup::Account {
  int64_t generation = -1;
  int64_t decided = 0;  // collectives of that generation whose outcome it knows
  char last = '-';      // the last one's outcome: 'c' commit, 'a' abort
  std::vector<int> members;
  std::string reach;  // where its process listens (reach_probe.h); "" when unknown
};

struct LiveGroup::Announcement {
  std::mutex mutex;
  std::string account;  // "" before the group formed
};

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

LiveGroup::LiveGroup(Collectives& collectives, IsSilent silent)
    : col_(collectives),
      silent_(std::move(silent)),
      reach_(collectives.rendezvous().master_addr, collectives.rendezvous().master_port),
      store_(collectives, std::chrono::seconds(5)),
      probe_(std::make_unique<Probe>(collectives)),
      store_patience_(collectives.timeout()),
      announcement_(std::make_shared<Announcement>()),
      patience_(collectives.timeout()),
      orphan_patience_(collectives.timeout()) {
  incarnation_ = store_.incarnation();
  // The first group of the job has formed: from now on a starting process is a replacement.
  if (!col_.joining()) {
    store_.decide(live_keys::kFirstGroup, ranks_text(col_.members()));
    publish(/*now=*/true);
  }
  // A member that re-forms the group ends the collectives the others are still waiting in
  // (one may be waiting on a survivor that has already given up on it).
  col_.set_abort_probe([this](Clock::duration waited) { return probe_reforming(waited); });
}

LiveGroup::Probe::Probe(Collectives& collectives)
    : store(collectives, std::chrono::seconds(1), BoundedStore::Connection::Own) {}

std::string LiveGroup::probe_reforming(Clock::duration waited) {
  const int64_t next = generation_ + 1;
  const std::string reforming = key(next, "reforming");
  std::string why = "a member began re-forming the group as generation " + std::to_string(next);
  try {
    if (!store_.lost()) {
      if (store_.check(reforming)) return why;
      if (partition_after_.count() == 0 || waited < partition_after_) return {};
      const auto now = Clock::now();
      auto due = next_partition_check_.load();
      if (now.time_since_epoch().count() < due ||
          !next_partition_check_.compare_exchange_strong(due, (now + partition_after_).time_since_epoch().count()))
        return {};
      return check_partition();
    }
  } catch (const StoreLost&) {
  }
  // store_ is lost (a request failed in a network cut or a store restart): the collective may
  // still complete through Gloo, and its commit reconnects store_. But a rank cut off while it
  // waited may have been fenced meanwhile, and then nobody completes it: it must hear of the
  // re-formation once the network is back, not after network.timeout_s.
  std::unique_lock<std::mutex> lock(probe_->mutex, std::try_to_lock);
  if (!lock.owns_lock()) return {};
  try {
    if (probe_->store.lost()) {
      if (Clock::now() < probe_->next_connect) return {};
      probe_->next_connect = Clock::now() + std::chrono::seconds(1);
      probe_->store.reconnect(std::chrono::milliseconds(0));
    }
    return probe_->store.check(reforming) ? why : std::string();
  } catch (const StoreLost&) {
    return {};
  }
}

std::vector<int> LiveGroup::silent_ones(const std::map<int, std::string>& addresses) {
  std::vector<int> ranks;
  std::vector<std::string> where;
  for (const auto& [rank, address] : addresses) {
    ranks.push_back(rank);
    where.push_back(address);
  }
  const auto reach = probe_reach_all(where, kReachTimeout);
  std::vector<int> silent;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (reach[i] == Reach::Silent) silent.push_back(ranks[i]);
  return silent;
}

// The members' reach addresses, read from their accounts once per generation (a member's
// process, and so its address, is the same for the generation's life): a wait that checks for
// partitions every window costs no K requests each time.
std::map<int, std::string> LiveGroup::member_addresses() {
  std::lock_guard<std::mutex> lock(addresses_.mutex);
  if (addresses_.generation != generation_) {
    addresses_.of.clear();
    addresses_.generation = generation_;
  }
  for (int r : col_.members())
    if (r != col_.job_rank() && !addresses_.of.count(r))
      if (const auto a = account_of(r); a && !a->reach.empty()) addresses_.of[r] = a->reach;
  return addresses_.of;
}

std::optional<int> LiveGroup::desired_ranks() {
  try {
    if (store_.lost() || !store_.check(live_keys::kDesiredRanks)) return std::nullopt;
    const std::string text = store_.get(live_keys::kDesiredRanks);
    if (const std::optional<int> desired = parse_desired(text)) return desired;
    spdlog::warn("the rendezvous store's desired size ({}) is '{}', not a number of ranks: ignored",
                 live_keys::kDesiredRanks, text);
  } catch (const StoreLost&) {  // the next agreement reconnects; this boundary keeps the size
  }
  return std::nullopt;
}

bool LiveGroup::gone(int r) {
  {
    std::lock_guard<std::mutex> lock(fenced_mutex_);
    if (contains(fenced_, r)) return true;
  }
  return silent_(r);
}

void LiveGroup::fence(const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(fenced_mutex_);
  for (int r : ranks)
    if (!contains(fenced_, r)) fenced_.push_back(r);
}

std::string LiveGroup::check_partition() {
  const int me = col_.job_rank();
  std::map<int, std::string> addresses;
  for (const auto& [r, address] : member_addresses())
    if (!gone(r)) addresses[r] = address;
  std::vector<int> unreachable;
  for (int r : silent_ones(addresses))
    if (!gone(r)) unreachable.push_back(r);  // a member silent by now is the heartbeat's to fence
  if (unreachable.empty()) return {};
  const int64_t next = generation_ + 1;
  store_.set(key(next, "unreachable/" + std::to_string(me)), ranks_text(unreachable));
  return fmt::format(
      "rank(s) [{}] cannot be reached from rank {} while they beat (a partition): re-forming as generation {}",
      ranks_text(unreachable), me, next);
}

std::vector<int> LiveGroup::without_partitions(int64_t next, std::vector<int> proposal) {
  std::vector<std::pair<int, int>> cuts;
  for (int r : proposal) {
    const std::string k = key(next, "unreachable/" + std::to_string(r));
    if (store_.check(k))
      for (int u : parse_list(store_.get(k))) cuts.emplace_back(r, u);
  }
  for (;;) {
    std::map<int, int> named;  // how many cuts between members still proposed name each
    for (const auto& [a, b] : cuts)
      if (contains(proposal, a) && contains(proposal, b)) ++named[a], ++named[b];
    if (named.empty()) return proposal;
    int out = -1, most = 0;
    for (const auto& [r, n] : named)
      if (n >= most) out = r, most = n;  // ascending ranks: the higher one wins a tie
    spdlog::warn("rank {} cannot reach, or be reached by, {} of the members (a partition): generation {} leaves it out",
                 out, most, next);
    proposal.erase(std::find(proposal.begin(), proposal.end(), out));
  }
}

bool LiveGroup::members_reachable(const std::vector<std::optional<Account>>& accounts) {
  const int me = col_.job_rank();
  int latest = -1;
  for (int r = 0; r < col_.job_size(); ++r)
    if (r != me && accounts[r] && (latest < 0 || accounts[r]->generation > accounts[latest]->generation)) latest = r;
  if (latest < 0) return true;
  std::map<int, std::string> addresses;
  for (int r : accounts[latest]->members)
    if (r != me && accounts[r] && !accounts[r]->reach.empty()) addresses[r] = accounts[r]->reach;
  const auto unreachable = ranks_text(silent_ones(addresses));
  if (unreachable != unreachable_logged_ && !unreachable.empty())
    spdlog::warn("rank {} cannot reach member(s) [{}] of the live group: it asks to rejoin once it can",
                 col_.job_rank(), unreachable);
  unreachable_logged_ = unreachable;
  return unreachable.empty();
}

void LiveGroup::set_store_limits(std::chrono::milliseconds request_timeout, std::chrono::milliseconds patience) {
  store_.set_request_timeout(request_timeout);
  store_patience_ = patience;
}

std::string LiveGroup::key(int64_t generation, const std::string& name) const {
  return live_keys::of_generation(generation, name);
}

void LiveGroup::publish(bool now) {
  const std::string account = std::to_string(generation_) + " " + std::to_string(exchange_) + " " + last_outcome_ +
                              " " + ranks_text(col_.members()) + " " +
                              (reach_.address().empty() ? "-" : reach_.address());
  {
    std::lock_guard<std::mutex> lock(announcement_->mutex);
    announcement_->account = account;
  }
  if (!now) return;
  try {  // a new generation's account at once: its reach address is what quorum sync's gate asks
    store_.set(live_keys::account(col_.job_rank()), account);
  } catch (const StoreLost&) {  // the heartbeat's next beat says it
  }
}

std::function<int(c10d::Store&)> LiveGroup::announcer() const {
  std::vector<int> all(col_.job_size());
  for (int r = 0; r < col_.job_size(); ++r) all[r] = r;
  return [a = announcement_, key = live_keys::account(col_.job_rank()), all = ranks_text(all)](c10d::Store& store) {
    std::string account;
    {
      std::lock_guard<std::mutex> lock(a->mutex);
      account = a->account;
    }
    if (account.empty()) return 0;
    store.set(key, bytes(account));
    store.compareSet(live_keys::kFirstGroup, {}, bytes(all));  // a restarted store: replacements stay replacements
    return 2;
  };
}

std::optional<LiveGroup::Account> LiveGroup::account_of(int rank) {
  const std::string k = live_keys::account(rank);
  if (!store_.check(k)) return std::nullopt;
  std::stringstream in(store_.get(k));
  Account a;
  std::string members;
  in >> a.generation >> a.decided >> a.last >> members >> a.reach;
  a.members = parse_list(members);
  if (a.reach == "-") a.reach.clear();
  return a;
}

std::vector<std::string> LiveGroup::fault_kinds(const std::vector<int>& lost) {
  std::vector<std::string> kinds(lost.size(), "lost");
  std::vector<size_t> probed;  // indices into `lost` whose reach address is probed
  std::vector<std::string> addresses;
  // Ranks named in this generation's partition reports were left out while they still beat.
  std::set<int> cut_off;
  try {
    std::vector<int> reporters = col_.members();
    reporters.insert(reporters.end(), lost.begin(), lost.end());
    for (int r : reporters)
      if (const std::string k = key(generation_, "unreachable/" + std::to_string(r)); store_.check(k)) {
        cut_off.insert(r);
        for (int u : parse_list(store_.get(k))) cut_off.insert(u);
      }
  } catch (const StoreLost&) {
  }
  for (size_t i = 0; i < lost.size(); ++i) {
    if (cut_off.count(lost[i])) {
      kinds[i] = "unreachable";
      continue;
    }
    try {
      const std::string said = live_keys::self_report(lost[i]);
      if (store_.check(said))
        if (auto s = store_.get(said); !s.empty()) {
          kinds[i] = s;
          continue;
        }
      if (const auto a = account_of(lost[i]); a && !a->reach.empty()) {
        probed.push_back(i);
        addresses.push_back(a->reach);
      }
    } catch (const StoreLost&) {  // named "lost"; the next request reconnects
    }
  }
  const auto reach = probe_reach_all(addresses, kNamingReachTimeout);
  for (size_t j = 0; j < probed.size(); ++j) {
    switch (reach[j]) {
      case Reach::Answered: kinds[probed[j]] = "stopped"; break;
      case Reach::Refused: kinds[probed[j]] = "killed"; break;
      case Reach::Silent: kinds[probed[j]] = "unreachable"; break;
    }
  }
  return kinds;
}

void LiveGroup::clear_self_report() { store_.set(live_keys::self_report(col_.job_rank()), ""); }

bool LiveGroup::reconnect(const std::string& why) {
  const auto start = Clock::now();
  const std::string before = incarnation_;
  try {
    incarnation_ = store_.reconnect(store_patience_);
  } catch (const StoreLost& e) {
    // Cut off from the store is this rank's fault as far as it can tell: the others may reach it
    // and go on (they fenced this rank long ago). It leaves to be replaced alone; were the store
    // gone for every rank, the replacements would find no group and the gang would restart.
    throw OutOfGroup(std::string("this rank could not reach the rendezvous store for network.timeout_s: ") + e.what() +
                     " after '" + why + "': it leaves the group to be replaced alone");
  }
  const bool kept = incarnation_ == before;
  outages_.push_back({!kept, std::chrono::duration<double>(Clock::now() - start).count()});
  spdlog::warn("{}; the rendezvous store answers again after {:.1f} s{}", why, outages_.back().seconds,
               kept ? ", with its keys" : ": it restarted and lost its keys, which the ranks rebuild");
  if (kept) return true;
  // Everything that lived only in the store is gone: join requests are counted afresh.
  rebuilt_ = true;
  joins_seen_ = 0;
  unanswered_join_from_.reset();
  return false;
}

bool LiveGroup::commit(bool done) {
  const ProgressClock::Waiting on_members(col_.progress());
  const int64_t index = exchange_;
  bool committed = false;
  for (;;) {
    try {
      committed = commit_in_store(index, done);
      break;
    } catch (const StoreLost& e) {
      if (reconnect(e.what())) continue;  // the same store: its keys are there, ask again
      committed = commit_after_restart(index, done);
      break;
    }
  }
  ++exchange_;
  last_outcome_ = committed ? 'c' : 'a';
  publish();
  return committed;
}

bool LiveGroup::commit_in_store(int64_t index, bool done) {
  const std::string base = key(generation_, "x" + std::to_string(index) + "/");
  const std::string outcome = base + "outcome";
  if (!done) return store_.decide(outcome, "abort") == "commit";
  // Each member marks its own key, and one request asks for all of them: a request sent again
  // after a lost answer sets the same key again. (A counter, add(1), sent twice would count this
  // member twice, and the collective could commit before every member completed it.)
  store_.set(base + "done/" + std::to_string(col_.job_rank()), "1");
  std::vector<std::string> every_member;
  for (int r : col_.members()) every_member.push_back(base + "done/" + std::to_string(r));
  const auto deadline = Clock::now() + col_.timeout();
  auto pause = std::chrono::microseconds(100);
  for (;;) {
    if (store_.check_all(every_member)) return store_.decide(outcome, "commit") == "commit";
    if (store_.check(outcome)) return store_.get(outcome) == "commit";
    if (col_.aborted() || Clock::now() > deadline) return store_.decide(outcome, "abort") == "commit";
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

bool LiveGroup::commit_after_restart(int64_t index, bool done) {
  const std::string outcome = key(generation_, "x" + std::to_string(index) + "/outcome");
  const auto deadline = Clock::now() + patience_;
  for (;;) {
    try {
      // Another member resolved it already, or one went on past it: that outcome.
      if (store_.check(outcome)) return store_.get(outcome) == "commit";
      std::optional<bool> seen;
      bool every_member_known = true;
      for (int r : col_.members()) {
        if (r == col_.job_rank()) continue;
        const auto a = account_of(r);
        if (!a) {
          every_member_known = every_member_known && gone(r);
          continue;
        }
        if (a->generation > generation_)
          throw OutOfGroup("rank " + std::to_string(r) + " formed generation " + std::to_string(a->generation) +
                           " of the live group without rank " + std::to_string(col_.job_rank()) +
                           " while the store restarted");
        if (a->generation == generation_ && a->decided > index)
          seen = a->decided == index + 1 ? a->last == 'c' : true;  // only a commit lets a member go on
      }
      // Nobody live saw an outcome (or this rank did not complete it): abort, everywhere alike.
      if (seen || every_member_known || !done || Clock::now() > deadline)
        return store_.decide(outcome, seen.value_or(false) && done ? "commit" : "abort") == "commit";
    } catch (const StoreLost& e) {
      reconnect(e.what());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<int> LiveGroup::join_requests(int64_t upto) {
  std::vector<int> ranks;
  for (int64_t i = joins_seen_ + 1; i <= upto; ++i) ranks.push_back(std::stoi(store_.get(live_keys::join_request(i))));
  return ranks;
}

std::vector<int> LiveGroup::recover() {
  const ProgressClock::Waiting on_members(col_.progress());
  const std::vector<int> before = col_.members();
  int64_t next = generation_ + 1;
  for (;;) {
    try {
      next = decide_members(next, before);
      break;
    } catch (const StoreLost& e) {
      reconnect(e.what());  // the same store or a restarted one: decide again in it
    }
  }
  form(next, before);
  std::vector<int> lost;
  for (int r : before)
    if (!contains(col_.members(), r)) lost.push_back(r);
  return lost;
}

int64_t LiveGroup::decide_members(int64_t next, const std::vector<int>& before) {
  const auto deadline = Clock::now() + patience_;
  for (;; ++next)
    if (decide_members_of(next, before, deadline)) return next;
}

// A member that began forming a generation has counted it as past (form); one that had not
// begun when the store restarted still stands before it. The store's keys of that generation
// died with it, so the two would each wait for the other at their own numbers until the
// patience ran out: the one behind follows the ones ahead (their "reforming" mark of the next
// number in a store that lacks this one's members).
bool LiveGroup::decide_members_of(int64_t next, const std::vector<int>& before, Clock::time_point deadline) {
  const std::string members_key = key(next, "members");
  const std::string ahead = key(next + 1, "reforming");
  auto moved_on = [&] {
    if (!store_.check(ahead)) return false;
    spdlog::warn(
        "the other members re-form as generation {}: generation {} was decided in the store before it "
        "restarted and never formed; going on with them",
        next + 1, next);
    return true;
  };
  if (store_.check(members_key)) return true;
  if (moved_on()) return false;
  store_.set(key(next, "reforming"), "1");
  store_.set(key(next, "arrived/" + std::to_string(col_.job_rank())), "1");
  while (!store_.check(members_key)) {
    if (moved_on()) return false;
    const auto requests = join_requests(store_.add(live_keys::kJoins, 0));
    const std::set<int> rejoining(requests.begin(), requests.end());
    // The members still expected: neither silent nor asking to rejoin. One request tells
    // whether all of them arrived (O(1) a look for this member, O(K) for the group); each
    // member's own key is read only to write the decision down.
    std::vector<std::string> expected;
    for (int r : before)
      if (!gone(r) && !rejoining.count(r)) expected.push_back(key(next, "arrived/" + std::to_string(r)));
    const bool all_expected_arrived = expected.empty() || store_.check_all(expected);
    const bool past_patience = Clock::now() > deadline;
    if (!all_expected_arrived && !past_patience && !rebuilt_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    std::vector<int> arrived, waiting;
    for (int r : before) {
      if (store_.check(key(next, "arrived/" + std::to_string(r)))) {
        arrived.push_back(r);
        continue;
      }
      // A restarted store: a member that formed `next` or later before it died went on without
      // this rank (its account says so); it is not coming.
      if (rebuilt_ && r != col_.job_rank())
        if (const auto a = account_of(r); a && a->generation >= next && !contains(a->members, col_.job_rank()))
          throw OutOfGroup("rank " + std::to_string(r) + " formed generation " + std::to_string(a->generation) +
                           " of the live group without rank " + std::to_string(col_.job_rank()) +
                           " while the store restarted");
      if (!gone(r) && !rejoining.count(r)) waiting.push_back(r);
    }
    // Past the patience the members that neither came nor fell silent are left out too: they
    // find the generation formed without them (OutOfGroup) and are replaced.
    if (waiting.empty() || Clock::now() > deadline) {
      store_.decide(members_key, ranks_text(without_partitions(next, arrived)));
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void LiveGroup::form(int64_t next, const std::vector<int>& before) {
  const auto members = parse_list(store_.get(key(next, "members")));
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
  if (source >= 0) source_ = std::stoi(store_.decide(key(next, "source"), std::to_string(source)));
  newcomers_.clear();
  for (int r : members)
    if (!contains(before, r)) newcomers_.push_back(r);
  // Past this generation even if forming it fails: a later recovery moves on from it.
  generation_ = next;
  {
    std::lock_guard<std::mutex> lock(fenced_mutex_);
    fenced_.clear();  // out of it, or (a replacement that came back) in it again
  }
  exchange_ = 0;
  last_outcome_ = '-';
  rebuilt_ = false;
  // A member the heartbeat found silent before the forming began (its report aborted the last
  // collective, or came while the members were agreed) is given up on as one that falls silent
  // now is. Newcomers are not asked: a replacement's predecessor may have been silent until
  // moments ago, and the heartbeat counts its silence from its welcome (LiveRecovery).
  col_.reform(members, next, [this, members, before] {
    for (int r : members)
      if (r != col_.job_rank() && contains(before, r) && silent_(r))
        return "rank " + std::to_string(r) + " is silent (no heartbeat for a window)";
    return std::string();
  });
  publish(/*now=*/true);
}

std::vector<int> LiveGroup::pending_joiners(int below) {
  const auto counts = col_.allgather(torch::tensor({store_.add(live_keys::kJoins, 0)}, torch::kInt64));
  int64_t agreed = 0;
  for (const auto& c : counts) agreed = std::max(agreed, c.item<int64_t>());
  std::vector<int> joiners;
  for (int r : join_requests(agreed)) {
    if (contains(col_.members(), r)) break;  // its old process is still a member: after the recovery
    if (r >= below) break;                   // a slot the job's size does not cover yet: it waits
    if (!contains(joiners, r)) joiners.push_back(r);
  }
  return joiners;
}

std::vector<int> LiveGroup::admit(const std::vector<int>& joiners) {
  const std::vector<int> before = col_.members();
  // The requests taken in: up to the first that stands for a member (see pending_joiners).
  int64_t upto = joins_seen_;
  for (int r : join_requests(store_.add(live_keys::kJoins, 0))) {
    if (!contains(joiners, r)) break;
    ++upto;
  }
  std::vector<int> proposal = before;
  for (int r : joiners)
    if (!contains(proposal, r)) proposal.push_back(r);
  std::sort(proposal.begin(), proposal.end());
  const int64_t next = generation_ + 1;
  store_.set(key(next, "joins"), std::to_string(upto));
  store_.decide(key(next, "members"), ranks_text(proposal));
  form(next, before);
  if (!newcomers_.empty()) joins_seen_ = upto;
  return newcomers_;
}

std::vector<int> LiveGroup::retire(const std::vector<int>& leavers) {
  const std::vector<int> before = col_.members();
  std::vector<int> proposal;
  for (int r : before)
    if (!contains(leavers, r)) proposal.push_back(r);
  const int64_t next = generation_ + 1;
  store_.set(key(next, "joins"), std::to_string(joins_seen_));  // it admits no new request
  store_.decide(key(next, "members"), ranks_text(proposal));
  form(next, before);
  std::vector<int> left;
  for (int r : before)
    if (!contains(col_.members(), r)) left.push_back(r);
  return left;
}

bool LiveGroup::join() {
  const ProgressClock::Waiting on_group(col_.progress());  // until the next admission
  for (;;) {
    try {
      return join_in_store();
    } catch (const StoreLost& e) {
      reconnect(e.what());  // a restarted store forgot the request: ask again
    }
  }
}

bool LiveGroup::join_in_store() {
  const int me = col_.job_rank();
  if (unanswered_join_from_) fill_join_holes(*std::exchange(unanswered_join_from_, std::nullopt));
  std::optional<int64_t> request;  // asked once this rank reaches every member
  auto next_look = Clock::now();
  // Every other rank's beat counter as last read, and when one last moved: members beat every
  // fifth of a heartbeat window, whatever their training thread does.
  std::vector<int64_t> beats(col_.job_size(), -1);
  auto last_beat = Clock::now();
  for (;;) {
    if (store_.check(live_keys::kDone)) {
      finished_result_ = store_.get(live_keys::kDone);
      return false;
    }
    if (Clock::now() >= next_look) {
      const std::string board = live_keys::beat_board();
      const auto now_beats = beat_board::parse(store_.check(board) ? store_.get(board) : "", col_.job_size());
      for (int r = 0; r < col_.job_size(); ++r) {
        if (r == me) continue;
        if (beats[r] >= 0 && now_beats[r] != beats[r]) last_beat = Clock::now();
        beats[r] = now_beats[r];
      }
      if (const auto quiet = Clock::now() - last_beat; quiet > orphan_patience_)
        throw LiveRecoveryGaveUp(fmt::format(
            "live recovery gives up: no other rank of the job has beaten for {:.1f} s while rank {} waited to "
            "rejoin: every member of the live group is gone (all ranks lost at once), so no group can take it "
            "back: gang restart from the last checkpoint",
            std::chrono::duration<double>(quiet).count(), me));
    }
    // Generations are followed from the latest a member accounts for, looked up again every
    // half second: a restarted store has none of the earlier ones, and the members may form
    // their next one in it past a number it never held (one whose forming failed when the store
    // died), which following the chain of members keys alone would never reach.
    if (Clock::now() >= next_look) {
      std::vector<std::optional<Account>> accounts(col_.job_size());
      for (int r = 0; r < col_.job_size(); ++r)
        if ((accounts[r] = account_of(r)) && accounts[r]->generation > generation_)
          generation_ = accounts[r]->generation;
      next_look = Clock::now() + std::chrono::milliseconds(500);
      if (!request && members_reachable(accounts)) {
        // Between the count and the request's key a lost answer (StoreLost) leaves a count that
        // may have been taken with no key behind it: the next attempt fills such a hole.
        unanswered_join_from_ = store_.add(live_keys::kJoins, 0);
        request = store_.add(live_keys::kJoins, 1);
        store_.set(live_keys::join_request(*request), std::to_string(me));
        unanswered_join_from_.reset();
      }
    }
    if (!request) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    while (store_.check(key(generation_ + 1, "members"))) ++generation_;
    // A generation takes this process in when it lists this rank and admitted its request.
    const std::string joins = key(generation_, "joins");
    if (store_.check(joins) && std::stoll(store_.get(joins)) >= *request) {
      const auto members = parse_list(store_.get(key(generation_, "members")));
      if (contains(members, me)) {
        joins_seen_ = std::stoll(store_.get(joins));
        source_ = std::stoi(store_.get(key(generation_, "source")));
        col_.reform(members, generation_);
        exchange_ = 0;
        last_outcome_ = '-';
        publish(/*now=*/true);
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Requests after `from` whose key is still missing once a requester would long have written it
// (its set follows its add at once) were counted by this rank's unanswered add: they get this
// rank, never overwriting a key another requester wrote, so that no member waits on a key that
// nobody will write. This rank asks again anyway; members take a rank's requests once.
void LiveGroup::fill_join_holes(int64_t from) {
  const int64_t upto = store_.add(live_keys::kJoins, 0);
  std::vector<int64_t> holes;
  for (int64_t i = from + 1; i <= upto; ++i)
    if (!store_.check(live_keys::join_request(i))) holes.push_back(i);
  if (holes.empty()) return;
  std::this_thread::sleep_for(2 * store_.request_timeout());
  for (int64_t i : holes)
    if (!store_.check(live_keys::join_request(i))) {
      store_.decide(live_keys::join_request(i), std::to_string(col_.job_rank()));
      spdlog::warn("join request {} was counted without its key (an answer lost): filled with rank {}", i,
                   col_.job_rank());
    }
}

void LiveGroup::finish(const std::string& result) {
  try {
    store_.set(live_keys::kDone, result);
  } catch (const StoreLost&) {  // a replacement still waiting then runs into its own limits
  }
}

}  // namespace ppu
