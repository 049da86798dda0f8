#include "engine/train/live_recovery.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/fnv1a.h"
#include "common/termination_message.h"
#include "core/coowners.h"
#include "core/elastic_size.h"
#include "core/exit_status.h"
#include "core/job_contract.h"

namespace ppu {

namespace {

// Under recovery gang any loss stops this rank (exit 3, the gang is restarted). From the
// heartbeat's thread: not shutdown(), the training thread may be logging.
[[noreturn]] void stop_for_lost_peer(const Heartbeat::Lost& lost) {
  const auto status = exit_status_of(PeerError(Heartbeat::describe(lost)));
  spdlog::error("{}", status.message);
  write_termination_message(status.message);
  spdlog::default_logger()->flush();
  std::_Exit(status.code);
}

}  // namespace

void PendingFault::note(const char* kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fault_) fault_ = {kind, Clock::now()};
}

std::optional<PendingFault::Taken> PendingFault::take() {
  std::optional<std::pair<std::string, Clock::time_point>> fault;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fault = std::exchange(fault_, std::nullopt);
  }
  if (!fault) return std::nullopt;
  return Taken{fault->first, std::chrono::duration<double>(Clock::now() - fault->second).count()};
}

void on_heartbeat_lost(const Heartbeat::Lost& lost, bool live, PendingFault& fault, Collectives& collectives) {
  if (!live) stop_for_lost_peer(lost);
  if (lost.rank >= 0 && !collectives.is_member(lost.rank)) {
    // Already out of the group (it left on a notice, or was fenced): its silence is no fault.
    spdlog::info("rank {}, no member of the group now (left, fenced, or a vacant slot), is silent", lost.rank);
    return;
  }
  spdlog::warn("{}", Heartbeat::describe(lost));
  if (lost.rank < 0) {
    spdlog::warn("training goes on; the next store request waits up to network.timeout_s for the store to come back");
    return;
  }
  fault.note("peer_silent");
  collectives.abort_for(lost.rank, Heartbeat::describe(lost));
}

void prepare_live_recovery(const Config& c, const RendezvousInfo& rendezvous, Collectives& collectives) {
  const auto beat = std::chrono::milliseconds(static_cast<int64_t>(c.network.heartbeat_s * 1000));
  collectives.set_connect_timeout(std::max<std::chrono::milliseconds>(3 * beat, std::chrono::seconds(5)));
  if (!rendezvous.external_store)
    throw ConfigError("config key 'network.recovery' is 'live' but the store is rank 0's: set " +
                      std::string(contract::env::kExternalStore) +
                      "=1 with a ppu-rendezvous at MASTER_ADDR:MASTER_PORT (ppu-launch and the operator do)");
}

std::vector<int> missing_ranks(const Collectives& collectives) {
  std::vector<int> missing;
  for (int r = 0; r < collectives.job_size(); ++r)
    if (!std::binary_search(collectives.members().begin(), collectives.members().end(), r)) missing.push_back(r);
  return missing;
}

LiveRecovery::LiveRecovery(const Config& c, int rank, Collectives& collectives, Heartbeat& heartbeat,
                           const SlicePlan& plan, RunParts run, PendingFault& fault, const CheckpointStore* store)
    : config_(c),
      rank_(rank),
      collectives_(collectives),
      heartbeat_(heartbeat),
      plan_(plan),
      run_(run),
      fault_(fault),
      store_(store),
      group_(collectives, [&heartbeat](int r) { return heartbeat.silent(r); }) {
  // A store request waits at most a heartbeat window; a lost store may stay away up to
  // network.timeout_s while its supervisor restarts it (then the gang restarts).
  const auto beat = std::chrono::milliseconds(static_cast<int64_t>(c.network.heartbeat_s * 1000));
  group_.set_store_limits(std::max<std::chrono::milliseconds>(beat, std::chrono::seconds(2)),
                          std::chrono::milliseconds(static_cast<int64_t>(c.network.timeout_s * 1000)));
  heartbeat.announce_with(group_.announcer());
  // A replacement that hears no other rank beat for this long is all that is left of the job.
  group_.set_orphan_patience(std::max<std::chrono::milliseconds>(3 * beat, std::chrono::seconds(5)));
  // A member stuck in a collective for a heartbeat window probes whether a member it waits on
  // is cut off from it alone (a partition: both still reach the store and beat).
  group_.set_partition_check(std::max<std::chrono::milliseconds>(beat, std::chrono::seconds(1)));
  // An elastic job's first group may be smaller than the job (its desired size): the owner counts
  // are the members' from the first outer sync on.
  if (!collectives.joining()) {
    desired_ = collectives.world_size();
    after_reform();
    note_size();
  }
}

SyncResult LiveRecovery::sync(int fragment, bool plain_average) {
  auto sync = until_one_generation_completes([&] {
    auto s = run_.outer.begin(fragment, false);
    s.plain_average = plain_average;
    run_.outer.complete(s);
    return s;
  });
  return run_.outer.apply(sync);
}

// The commit after an attempt: whether every member completed it; if not, the survivors re-form.
bool LiveRecovery::settle(const std::string& failure) {
  const bool committed = group_.commit(failure.empty());
  count_store_outages();
  if (committed) return true;
  fault_.note("peer_failed");  // a no-op when this rank's own failure is noted already
  recover(failure.empty() ? "a member did not complete a collective" : failure);
  return false;
}

void LiveRecovery::recover(std::string why) {
  // Every rank lost from here until a group forms is a fault, a second loss during the
  // re-formation included: counted against the members as they stood now.
  const std::vector<int> members_before = collectives_.members();
  const auto start = Clock::now();  // a forming given up on (a second loss) is part of the recovery
  for (;;) {
    spdlog::warn("the group lost a member ({}): re-forming without it", why);
    group_.set_patience(reform_patience());
    try {
      group_.recover();             // OutOfGroup (exit 5) if the others went on without this rank
    } catch (const PeerError& e) {  // another member was lost while the group formed: again
      why = e.what();
      count_store_outages();
      continue;
    }
    count_store_outages();
    std::vector<int> lost_since_failure;
    for (int r : members_before)
      if (!collectives_.is_member(r)) lost_since_failure.push_back(r);
    fault_recovered(lost_since_failure);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    ++run_.recovery.recoveries;
    run_.recovery.recovery_seconds += seconds;
    run_.metrics.add_recovery(true, seconds);
    after_reform();
    // Named: every member lost since the failure, one lost while an earlier forming was given
    // up on included (recover() returns only what the last forming left out).
    if (lost_since_failure.empty())  // every member came (a store restart, a failed collective without a loss)
      spdlog::warn("re-formed in round {} (step {}) with every member: generation {} has ranks [{}] ({:.1f} s)",
                   run_.progress.rounds + 1, run_.progress.step, group_.generation(),
                   ranks_text(collectives_.members()), seconds);
    else
      spdlog::warn("lost rank(s) [{}] in round {} (step {}): generation {} has ranks [{}] ({:.1f} s to re-form)",
                   ranks_text(lost_since_failure), run_.progress.rounds + 1, run_.progress.step, group_.generation(),
                   ranks_text(collectives_.members()), seconds);
    const auto live = static_cast<double>(collectives_.world_size());
    const int required = required_ranks(config_, collectives_.job_size());  // every slot, or network.min_ranks
    if (live < config_.network.min_live_fraction * required)
      throw LiveRecoveryGaveUp(
          "live recovery gives up: " + std::to_string(collectives_.world_size()) + " of " + std::to_string(required) +
          " ranks live, below network.min_live_fraction = " + fmt::format("{}", config_.network.min_live_fraction) +
          ": gang restart from the last checkpoint");
    // A generation that also took replacements in (a concurrent admission decided it)
    // sends them the state first, as round_end's admission does.
    if (group_.newcomers().empty()) return;
    why = "taking rank(s) [" + ranks_text(group_.newcomers()) + "] in failed";
    if (take_in_newcomers()) return;
  }
}

// How long a re-formation waits for members that neither arrive nor fall silent: a member
// still in a step arrives when it ends, one still forming the previous generation when Gloo
// gives up on the dead peer (its store wait and its pair connect, a connect timeout each);
// past the longer of the two plus two heartbeats it is hung or cut off, and the others go on
// without it (network.timeout_s at most).
std::chrono::milliseconds LiveRecovery::reform_patience() const {
  const double window = collectives_.progress().window();
  const double forming = 2 * std::chrono::duration<double>(collectives_.connect_timeout()).count();
  const double seconds =
      std::isfinite(window) ? std::max(window, forming) + 2 * config_.network.heartbeat_s : config_.network.timeout_s;
  return std::chrono::milliseconds(static_cast<int64_t>(1000 * std::min(seconds, config_.network.timeout_s)));
}

// The members' side of taking replacements in: the state to the newcomers, then the commit
// that the newcomers make too (rejoin). Whether every member and newcomer completed it.
bool LiveRecovery::take_in_newcomers() {
  heartbeat_.welcome(group_.newcomers());  // they beat only from now on: their silence counts from here
  bool sent = true;
  try {
    share_state(false);
  } catch (const PeerError& e) {
    spdlog::warn("sending the state to rank(s) [{}] failed: {}", ranks_text(group_.newcomers()), e.what());
    sent = false;
  }
  return group_.commit(sent);
}

// The owner counts of the new group's members (every rank: the configured ones).
void LiveRecovery::after_reform() {
  std::vector<SlicePlan> plans;
  for (int r : collectives_.members()) plans.push_back(SlicePlan::from_config(config_, collectives_.job_size(), r));
  run_.outer.set_owners(std::move(plans), collectives_.job_size());
  run_.metrics.set_live(collectives_.world_size(), run_.outer.min_coverage());
}

// The newcomers of this generation get θ, the momentum and where the run is from its source;
// a newcomer's inner optimiser starts fresh and its data continues its rank's stream.
void LiveRecovery::share_state(bool newcomer) {
  const auto& members = collectives_.members();
  const int root = static_cast<int>(std::find(members.begin(), members.end(), group_.source()) - members.begin());
  // desired_: every member must take in the same joiners (admit_joiners), newcomers included.
  auto where = torch::tensor(
      {run_.progress.step, run_.progress.rounds, run_.progress.uncovered_rounds, run_.progress.last_checkpoint_round,
       run_.progress.degraded_rounds, static_cast<int64_t>(desired_)},
      torch::kInt64);
  collectives_.broadcast(where, root);
  run_.outer.share_state(collectives_, root, newcomer);
  share_inner_state(root);
  if (!newcomer) return;
  run_.progress.step = where[0].item<int64_t>();
  run_.progress.rounds = where[1].item<int64_t>();
  run_.progress.uncovered_rounds = where[2].item<int64_t>();
  run_.progress.last_checkpoint_round = where[3].item<int64_t>();
  run_.progress.degraded_rounds = where[4].item<int64_t>();
  desired_ = static_cast<int>(where[5].item<int64_t>());
  run_.loader.seek(static_cast<uint64_t>(run_.progress.step));  // one batch per inner step
}

// network.replacement_inner_state coowner: each newcomer, in job-rank order, takes the inner
// AdamW state (moments and step) of the lowest co-owner of its slice that was already a member
// (core/coowners.h), by one broadcast from that co-owner; without one it starts fresh. Its
// weights stay θ: the co-owner's local weights carry the co-owner's own progress of this round,
// which the co-owner's delta already brings to θ; a copy would count it twice. The newcomers
// come from the source (a newcomer's LiveGroup does not know the others), so every member and
// newcomer runs the same broadcasts.
void LiveRecovery::share_inner_state(int root) {
  if (config_.network.replacement_inner_state != ReplacementState::Coowner) return;
  auto flags = torch::zeros({collectives_.job_size()}, torch::kInt64);
  for (int r : group_.newcomers()) flags[r] = 1;
  collectives_.broadcast(flags, root);
  std::vector<int> newcomers;
  for (int r = 0; r < collectives_.job_size(); ++r)
    if (flags[r].item<int64_t>() != 0) newcomers.push_back(r);
  const auto& members = collectives_.members();
  for (int n : newcomers) {
    const int source = coowner_source(n, members, newcomers, plan_.slices());
    const int me = collectives_.job_rank();
    if (source < 0) {
      if (me == n)
        spdlog::info("rank {}: no live co-owner of slice {}: its inner state starts fresh", n, plan_.slice_index());
      continue;
    }
    const int from = static_cast<int>(std::find(members.begin(), members.end(), source) - members.begin());
    run_.inner.share_state(collectives_, from, me == n);
    if (me == source || me == n)
      spdlog::info("inner state of rank {} {} rank {} (co-owner of slice {}): digest {}", n,
                   me == n ? "taken from" : "sent by", source, plan_.slice_index(), hex64(run_.inner.state_digest()));
  }
}

bool LiveRecovery::rejoin() {
  const auto start = Clock::now();
  spdlog::info("rank {} is a replacement: asking the live group to take it back", rank_);
  std::string failure;
  try {
    if (!group_.join()) return false;
    group_.clear_self_report();
    heartbeat_.start();  // only now: until the group took it in, its predecessor's silence spoke
    share_state(true);
  } catch (const LiveRecoveryGaveUp&) {
    throw;                        // no group is left to take it back: gang restart (exit 3)
  } catch (const PeerError& e) {  // the group is not at fault: only this rank starts again (exit 5)
    failure = e.what();
  }
  // The members commit the same step (take_in_newcomers): all of them hold the shared state,
  // or none goes on with this process.
  const bool joined = group_.commit(failure.empty());
  count_store_outages();
  if (!joined) throw OutOfGroup("rejoining failed: " + (failure.empty() ? "a member did not complete it" : failure));
  after_reform();
  run_.recovery.rejoined_at_step = run_.progress.step;
  run_.recovery.recovery_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  run_.metrics.set_checkpoint_round(static_cast<double>(std::max<int64_t>(0, run_.progress.last_checkpoint_round)));
  spdlog::info("rank {} rejoined in round {} (step {}): generation {} has ranks [{}]; state from rank {}", rank_,
               admission_round(), run_.progress.step, group_.generation(), ranks_text(collectives_.members()),
               group_.source());
  return true;
}

RunSummary LiveRecovery::finished_without_this_rank() const {
  spdlog::info("the job finished before rank {} could rejoin: reporting the job's result", rank_);
  auto r = nlohmann::json::parse(group_.finished_result()).get<RunSummary>();
  r.rank = rank_;
  r.tokens = r.flops_executed = r.flops_full_backward = r.flops_saved_fraction = 0;
  r.bytes_sent = r.bytes_received = r.bytes_allreduced = r.network_wait_seconds = r.sync_seconds = 0;
  r.recovery = run_.recovery;
  r.recovery.live_ranks = 0;  // never in the final group
  return r;
}

// The summary's list of degraded rounds: this round joins the last span when it follows it
// with the same ranks missing.
void LiveRecovery::note_degraded_round() {
  const auto missing = missing_ranks(collectives_);
  auto& spans = run_.recovery.degraded;
  if (!spans.empty() && spans.back().last_round == run_.progress.rounds - 1 && spans.back().missing == missing)
    spans.back().last_round = run_.progress.rounds;
  else spans.push_back({run_.progress.rounds, run_.progress.rounds, missing});
}

void LiveRecovery::round_end() {
  if (degraded()) {
    if (!degraded_since_) degraded_since_ = Clock::now();
    ++run_.recovery.rounds_degraded;
    ++run_.progress.degraded_rounds;
    run_.metrics.add_degraded_round();
    note_degraded_round();
  }
  interruptions_.round_end(run_.recovery, missing_ranks(collectives_));
  if (run_.outer.min_coverage() == 0) {
    if (++run_.progress.uncovered_rounds > config_.network.max_uncovered_rounds)
      give_up("an element has had no live owner for " + std::to_string(run_.progress.uncovered_rounds) +
              " rounds (network.max_uncovered_rounds = " + std::to_string(config_.network.max_uncovered_rounds) +
              "): gang restart from the last checkpoint");
  } else {
    run_.progress.uncovered_rounds = 0;
  }
  admit_joiners();
}

// The round an admission belongs to: at a boundary the one just finished (progress.rounds counts
// it already), inside a round the one under way.
int64_t LiveRecovery::admission_round() const {
  return run_.progress.step % config_.outer.sync_every == 0 ? run_.progress.rounds : run_.progress.rounds + 1;
}

void LiveRecovery::admit_joiners() {
  if (run_.progress.step == config_.train.steps) return;
  // An elastic job takes in only the slots its size covers (a process started for a slot before
  // the store had the larger size waits; admitted, it would retire at the next boundary).
  const int below = config_.network.min_ranks > 0 ? desired_ : std::numeric_limits<int>::max();
  const auto joiners = until_one_generation_completes([&] { return group_.pending_joiners(below); });
  if (joiners.empty()) return;
  const auto start = Clock::now();
  // A replacement beats only once taken in, and its predecessor may have beaten until moments
  // ago (a rank cut off, then back, beats until it hears it was fenced): from here its silence
  // counts from now, or that predecessor's silence would abandon this very admission.
  heartbeat_.welcome(joiners);
  // Not run again when it fails: the recovery drops whoever was lost, a newcomer included,
  // and the next boundary sees the requests that are still standing.
  const auto added = attempt([&] {
    auto newcomers = group_.admit(joiners);
    if (!newcomers.empty()) share_state(false);
    return newcomers;
  });
  if (!added) return;
  after_reform();  // the generation admit formed, with or without the joiners
  if (added->empty()) return;
  ++run_.recovery.rejoins;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run_.recovery.recovery_seconds += seconds;
  run_.metrics.add_recovery(false, seconds);
  spdlog::info("rank(s) [{}] rejoined in round {} (step {}): generation {} has ranks [{}]", ranks_text(*added),
               admission_round(), run_.progress.step, group_.generation(), ranks_text(collectives_.members()));
}

// network.max_degraded_rounds: a job still missing a rank after this boundary's admission, for
// more consecutive rounds than that, falls back to a gang restart (exit 3), after this round's
// checkpoint if one was due, so the restart loses no more than checkpoint.every_rounds. Every
// member counts the same rounds (newcomers get the count), so all of them decide alike.
// Rounds and seconds both: rounds alone would turn a replacement that takes a few seconds to
// start into a gang restart when rounds are short (20 rounds of 10 short steps pass in seconds);
// members' clocks differ, so the seconds are the longest any member counted (agreed at the
// boundary), and every member decides alike.
void LiveRecovery::bound_degraded(double degraded_s) {
  if (!degraded()) {
    run_.progress.degraded_rounds = 0;
    degraded_since_.reset();
    return;
  }
  if (run_.progress.degraded_rounds <= config_.network.max_degraded_rounds || run_.progress.step == config_.train.steps)
    return;
  if (degraded_s < config_.network.max_degraded_s) return;
  give_up("the job has run with rank(s) [" + ranks_text(missing_ranks(collectives_)) + "] missing for " +
          std::to_string(run_.progress.degraded_rounds) +
          " consecutive rounds (network.max_degraded_rounds = " + std::to_string(config_.network.max_degraded_rounds) +
          ") and " + fmt::format("{:.1f} s (network.max_degraded_s = {})", degraded_s, config_.network.max_degraded_s) +
          ": gang restart from the checkpoint of round " + std::to_string(run_.progress.last_checkpoint_round));
}

// Fewer members than the job requires (every slot, or an elastic job's network.min_ranks): slots
// missing above that, lost or not started yet, leave an elastic job smaller, not degraded.
bool LiveRecovery::degraded() const {
  return collectives_.world_size() < required_ranks(config_, collectives_.job_size());
}

void LiveRecovery::resize(std::optional<int> asked) {
  if (config_.network.min_ranks == 0 || run_.progress.step == config_.train.steps) return;
  const int slots = collectives_.job_size();
  if (asked) {
    const int desired = clamp_desired(*asked, required_ranks(config_, slots), slots);
    if (desired != desired_)
      spdlog::info("the job's desired size is {} of {} slots from round {} (was {}){}", desired, slots,
                   run_.progress.rounds, desired_,
                   desired != *asked ? fmt::format(": {} was asked, outside the range", *asked) : "");
    desired_ = desired;
  }
  const Shrink shrink = shrink_to(collectives_.members(), desired_, plan_.slices());
  if (!shrink.refused.empty() && shrink.refused != shrink_refused_)
    spdlog::warn("not shrinking yet: {}", shrink.refused);
  shrink_refused_ = shrink.refused;
  if (shrink.leavers.empty()) return note_size();
  if (contains(shrink.leavers, rank_))
    throw Retired(
        fmt::format("the job shrank to {} ranks at the end of round {} (step {}): slot {} is vacant now, and "
                    "the others go on without it; this process trained {:.0f} tokens",
                    desired_, run_.progress.rounds, run_.progress.step, rank_, run_.progress.tokens));
  const auto start = Clock::now();
  const auto left = attempt([&] { return group_.retire(shrink.leavers); });
  if (!left) return note_size();  // the attempt failed: the recovery that followed re-formed without them
  after_reform();
  spdlog::info(
      "rank(s) [{}] retired at the end of round {} (step {}): the job shrank to {} ranks; generation {} has "
      "ranks [{}] ({:.2f} s to re-form)",
      ranks_text(*left), run_.progress.rounds, run_.progress.step, desired_, group_.generation(),
      ranks_text(collectives_.members()), std::chrono::duration<double>(Clock::now() - start).count());
  note_size();
}

// The summary's size history: an entry whenever the members or the desired size changed since
// the last one.
void LiveRecovery::note_size() {
  if (config_.network.min_ranks == 0) return;
  auto& history = run_.recovery.size_history;
  const int ranks = collectives_.world_size();
  if (!history.empty() && history.back().ranks == ranks && history.back().desired == desired_) return;
  history.push_back({run_.progress.rounds, ranks, desired_});
}

double LiveRecovery::degraded_seconds() const {
  return degraded_since_ ? std::chrono::duration<double>(Clock::now() - *degraded_since_).count() : 0;
}

void LiveRecovery::let_go(const std::vector<int>& leavers) {
  const auto start = Clock::now();
  const auto left = attempt([&] { return group_.retire(leavers); });
  if (!left) return;  // the attempt failed: the recovery that followed re-formed without them
  after_reform();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ++run_.recovery.recoveries;
  run_.recovery.recovery_seconds += seconds;
  run_.metrics.add_recovery(true, seconds);
  tally_fault("preempted", seconds);
  interruptions_.lost(run_.recovery, run_.progress.rounds, "preempted", *left);
  spdlog::warn("rank(s) [{}] left on notice in round {} (step {}): generation {} has ranks [{}] ({:.2f} s to re-form)",
               ranks_text(*left), run_.progress.rounds, run_.progress.step, group_.generation(),
               ranks_text(collectives_.members()), seconds);
}

void LiveRecovery::fence_at_gate(const std::vector<int>& ranks, int64_t step) {
  group_.fence(ranks);
  fault_.note("peer_silent");
  for (int r : ranks) {
    const std::string why = fmt::format(
        "rank {} missed the close of the sync point after step {} and its process does not answer: fenced at the gate",
        r, step);
    spdlog::warn("{}", why);
    collectives_.abort_for(r, why);
  }
}

void LiveRecovery::finish(const RunSummary& result) {
  if (collectives_.rank() == 0) group_.finish(nlohmann::json(result).dump());
}

// Live recovery falls back to a gang restart (exit 3): the lowest member notes why in the
// checkpoint directory (kFallbackNote), so that the restarted run logs it and its summary
// names it (recovery.fallback).
void LiveRecovery::give_up(const std::string& why) {
  const std::string message = "live recovery gives up: " + why;
  spdlog::error("{}", message);
  if (store_) {
    const nlohmann::json note = {{"reason", message}, {"round", run_.progress.rounds}, {"step", run_.progress.step}};
    store_->write_note(kFallbackNote, note.dump(2));
  }
  throw LiveRecoveryGaveUp(message);
}

// ---- Faults by kind (summary recovery.faults, ppu_faults_total) ----

// The group re-formed without `lost`: each is a fault, named for what happened to it
// (LiveGroup::fault_kinds), with the seconds from the first detection. A failure that lost nobody
// and was no store outage was a link that failed and came back: "unreachable".
void LiveRecovery::fault_recovered(const std::vector<int>& lost) {
  const auto fault = fault_.take();
  const double seconds = fault ? fault->seconds : 0;
  const bool store_fault = std::exchange(store_fault_, false);
  if (lost.empty()) {
    if (fault && !store_fault) tally_fault("unreachable", seconds);
    return;
  }
  const auto kinds = group_.fault_kinds(lost);
  std::map<std::string, std::vector<int>> by_kind;
  for (size_t i = 0; i < lost.size(); ++i) {
    spdlog::warn("rank {} was lost: {} (detected {:.1f} s ago as: {})", lost[i], kinds[i], seconds,
                 fault ? fault->kind : "a failed re-formation");
    tally_fault(kinds[i], seconds);
    by_kind[kinds[i]].push_back(lost[i]);
  }
  for (const auto& [kind, ranks] : by_kind) interruptions_.lost(run_.recovery, run_.progress.rounds, kind, ranks);
}

void LiveRecovery::tally_fault(const std::string& kind, double seconds) {
  auto& t = run_.recovery.faults[kind];
  ++t.count;
  t.recover_seconds += seconds;
  run_.metrics.add_fault(kind, seconds);
}

// The store's outages LiveGroup went through (a restarted store is rebuilt in place: no
// re-formation needed unless a member was lost too).
void LiveRecovery::count_store_outages() {
  for (const auto& o : group_.take_store_outages()) {
    spdlog::warn("the rendezvous store was {} for {:.1f} s", o.restarted ? "restarted empty" : "unreachable",
                 o.seconds);
    tally_fault("store", o.seconds);
    store_fault_ = true;
  }
}

}  // namespace ppu
