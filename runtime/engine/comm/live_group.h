// LiveGroup: how the ranks of a network.recovery=live job agree, through the external
// rendezvous store, on what a failure changes — which exchanges took effect, who is in the
// next group, and when a replacement comes back. Collectives carries out the decisions
// (reform); the trainer decides what to do with them (docs/RECOVERY.md).
//
// Store keys (every rank sees the same store, which outlives all of them):
//   live/g<n>/members        the job ranks of generation n, ascending ("0,1,3"); written once
//                            by compare-and-set, so every rank reads the same list
//   live/g<n>/reforming      a member began re-forming after a failure: every member abandons
//                            the collective it waits in (Collectives' abort probe; while this
//                            rank's connection is lost the probe asks through one of its own,
//                            so a rank fenced while cut off hears it once the network is back)
//   live/g<n>/arrived/<r>    rank r reached the re-formation of generation n after a failure
//   live/g<n>/source         the job rank that sends the state to generation n's newcomers
//   live/g<n>/x<s>/done/<r>  member r completed collective s of generation n (a key per member,
//                            so that a request sent again cannot count a member twice)
//   live/g<n>/x<s>/outcome   "commit" or "abort", compare-and-set: the collective's fate
//   live/joins, live/join/<i> replacements asking to come back, in order of arrival
//   live/desired             an elastic job's desired size (live_store_keys.h, docs/RESIZE.md)
//   live/done                the job finished (a member's summary): a replacement still waiting
//                            reports it and exits
//   ppu/heartbeat/board      every rank's beat counter (Heartbeat, beat_board.h): a replacement
//                            waiting to join watches the others' move, so that it knows when
//                            none is left
//   live/at/<r>              member r's own account, written when it forms a generation and rewritten with each of its
//   heartbeats
//                            (announce): "<generation> <collectives decided> <last outcome c|a|->
//                            <members> <reach address>" — what a restarted store is rebuilt
//                            from, and where a survivor probes a lost member (reach_probe.h)
//   live/fault/<r>           what rank r said of itself before it went silent ("hung")
//   live/g<n>/unreachable/<r> the members of generation n-1 that rank r could not reach while
//                            they beat (a partition: set_partition_check)
//
// Contracts:
//  - commit(done): every member of the generation gets the same answer for its next
//    collective (the trainer commits after each one); "commit" only if every member completed
//    it. A member that was stopped and resumed after
//    the others moved on reads their answer, never a different one.
//  - recover(): the survivors' next generation: every member of the current one that reached
//    it, waiting for the others until each has either arrived or gone silent (heartbeat) or
//    asked to rejoin as a new process, or `patience` has passed (set_patience: a member that
//    still beats but does not come is left out too, and finds itself out of the group). Throws
//    OutOfGroup when that generation was formed without this rank, PeerError when forming the
//    Gloo group of the agreed members fails (a member died meanwhile: recover again).
//  - Partitions: a member waiting in a collective for longer than the partition check's bound
//    probes the other members' reach addresses (reach_probe.h) once per bound; those that do
//    not answer while their heartbeat still moves are cut off from it alone. It writes them down
//    (live/g<n+1>/unreachable/<r>) and abandons the collective, and the re-formation leaves out
//    the fewest members so that no two that cannot reach each other stay together (the one named
//    in most reports first, the higher job rank on a tie). A replacement asks to join only once
//    it reaches every member of the latest generation, so that a partition that outlives its
//    predecessor does not fail the group's forming at every round boundary.
//  - pending_joiners()/admit(): where the members admit (a round boundary, a fragment's sync
//    point), the replacements every member has seen (one all-gather of the join count) and the
//    generation that takes them in.
//  - join(): a replacement's side: ask, wait for a generation that includes this rank, form it.
//  - The store itself may die and be restarted by its supervisor (ppu-launch, the operator). No
//    request waits longer than the request timeout (BoundedStore); a lost connection is opened
//    again for up to the store patience (then OutOfGroup, exit 5: this rank is replaced alone,
//    for as far as it can tell it is the one cut off). A store with another
//    incarnation has lost every key; the ranks rebuild what they need from their own accounts
//    (live/at/<r>, republished by every member's heartbeat within a fifth of its window):
//    a collective whose outcome was lost takes the outcome a member saw ("commit" if any member
//    went on past it), or "abort" when no live member saw one; a member that finds a later
//    generation formed without it is out of the group (OutOfGroup); replacements ask again; the
//    next generation forms in the new store as after any failure. Members that stood at two
//    generations when it restarted (one had begun forming a generation decided in the old store,
//    another had not) meet at the later one. The θ digest check of the next
//    outer sync (trainer) catches a member that went on from a different outcome.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/bounded_store.h"
#include "engine/comm/collectives.h"
#include "engine/comm/reach_probe.h"

namespace ppu {

// Live recovery cannot go on under its coverage rules (network.min_live_fraction,
// network.max_uncovered_rounds): the one live-path failure that restarts the gang (exit 3).
// Every other failure of the live path leaves this rank out of the group (exit 5, restarted
// alone): see train().
class LiveRecoveryGaveUp : public PeerError {
 public:
  using PeerError::PeerError;
};

// Job ranks as the store and the logs write them: "0,1,3".
std::string ranks_text(const std::vector<int>& ranks);
// Whether job rank r is among `ranks`.
bool contains(const std::vector<int>& ranks, int r);

class LiveGroup {
 public:
  // Whether a job rank has gone silent (Heartbeat::silent, with keep_watching).
  using IsSilent = std::function<bool(int)>;
  // `silent` tells who is silent while a generation forms.
  LiveGroup(Collectives& collectives, IsSilent silent);

  int64_t generation() const { return generation_; }
  // How long recover() waits for members that neither arrive nor fall silent (default: the
  // collectives' timeout).
  void set_patience(std::chrono::milliseconds patience) { patience_ = patience; }
  // After how long a wait in a collective the members' reach is probed (see Partitions; 0, the
  // default: never).
  void set_partition_check(std::chrono::milliseconds after) { partition_after_ = after; }
  // How long one store request may take (default: the connect timeout's floor, 5 s), and how long
  // a lost store may stay away before live recovery gives up (default: the collectives' timeout).
  void set_store_limits(std::chrono::milliseconds request_timeout, std::chrono::milliseconds patience);
  // The store outages this rank went through since the last call: whether the store came back
  // empty (restarted) or with its keys, and the seconds from the failed request until it answered.
  struct StoreOutage {
    bool restarted;
    double seconds;
  };
  std::vector<StoreOutage> take_store_outages() { return std::exchange(outages_, {}); }

  // Writes this member's account (live/at/<rank>) and the first group's marker with the store
  // connection it is given: for the heartbeat's thread (Heartbeat::announce_with), after each
  // beat. Nothing until the group formed; safe to call after this object is gone. Returns the
  // store requests it made.
  std::function<int(c10d::Store&)> announcer() const;
  // An elastic job's desired size as the store holds it now (live_keys::kDesiredRanks), or none
  // (not written, or the store is unreachable). Read at round boundaries.
  std::optional<int> desired_ranks();
  // Store requests this member's agreements, polls and abort probes made so far.
  int64_t store_requests() const { return store_.requests() + probe_->store.requests(); }

  // Whether the next collective of this generation took effect on every member; `done`: it
  // completed here.
  bool commit(bool done);

  // Forms the survivors' next generation (see above) and returns the job ranks it lost.
  std::vector<int> recover();
  // Members found gone by other means than the heartbeat (quorum sync's gate: they missed a
  // sync point's close and their processes do not answer): the next re-formation waits for them
  // no more than for a silent member. Until a generation forms.
  void fence(const std::vector<int>& ranks);
  // The members' reach addresses by job rank (other than this rank), read from their accounts
  // once per generation. Training thread.
  std::map<int, std::string> member_addresses();

  // The fault that took each of `lost` (job ranks the group just left out), named from what the
  // rank said of itself ("hung") or else from what its reach address answers now: "stopped"
  // (its process is there but silent: SIGSTOP, a paused VM), "killed" (its process is gone),
  // "unreachable" (its host or the path to it is gone: a cut, a lost node; or it was left out
  // for a partition, named in this generation's reports), "lost" (no account to probe: the
  // store restarted while it was silent). Probes run in parallel, 0.1 s at most (the survivors
  // wait for them before they train again).
  std::vector<std::string> fault_kinds(const std::vector<int>& lost);
  // A replacement that joined: what its predecessor said of itself no longer stands.
  void clear_self_report();

  // The replacements to take in now, the same on every member (a collective of the group).
  // `below`: only slots below it (an elastic job's size); the requests from the first slot at or
  // above it on wait, in order, for a later admission.
  std::vector<int> pending_joiners(int below = std::numeric_limits<int>::max());
  // Forms the next generation with `joiners` added; returns the job ranks actually added (the
  // generation may have been taken by a concurrent recovery, without them): newcomers().
  std::vector<int> admit(const std::vector<int>& joiners);

  // Forms the next generation without `leavers` (members that left on a notice, at a round
  // boundary every member agreed on): nobody waits for them to fall silent. Returns the job
  // ranks actually left out (a concurrent recovery may have decided the generation already).
  std::vector<int> retire(const std::vector<int>& leavers);

  // A replacement's side. Returns false when the job finished before taking this rank back
  // (finished_result() is then the job's result). LiveRecoveryGaveUp when no other rank of the
  // job has beaten for the orphan patience while it waited: every member is gone (all ranks
  // lost at once), so there is no group to take it back and the job must restart as a gang.
  bool join();
  // How long join() waits for any other rank's heartbeat to move (default: the collectives'
  // timeout).
  void set_orphan_patience(std::chrono::milliseconds patience) { orphan_patience_ = patience; }

  // The job rank that sends the current generation's newcomers their state, and those
  // newcomers (empty when the generation only lost ranks).
  int source() const { return source_; }
  const std::vector<int>& newcomers() const { return newcomers_; }
  // Marks the job finished with its result (a member's run summary, JSON): replacements still
  // waiting stop and report it (finished_result()).
  void finish(const std::string& result);
  const std::string& finished_result() const { return finished_result_; }

 private:
  struct Account;       // a member's account (live/at/<r>), as read back
  struct Announcement;  // this member's account, shared with the heartbeat's thread

  std::string key(int64_t generation, const std::string& name) const;
  // Reads generation `next`'s members (written by whoever decided it), forms it, and records
  // the state source for newcomers relative to `before`.
  void form(int64_t next, const std::vector<int>& before);
  std::vector<int> join_requests(int64_t upto);  // ranks of requests joins_seen_+1..upto
  // The store as it stands: the commit protocol of collective `index`.
  bool commit_in_store(int64_t index, bool done);
  // The same collective after the store restarted and lost its outcome (see the contract).
  bool commit_after_restart(int64_t index, bool done);
  // Decides the members of generation `next`, or of a later one when the other members went on
  // past `next` in a restarted store, as recover() describes; returns the generation decided.
  int64_t decide_members(int64_t next, const std::vector<int>& before);
  // One generation's decision; false when the others re-form as the next one instead.
  bool decide_members_of(int64_t next, const std::vector<int>& before, std::chrono::steady_clock::time_point deadline);
  // A replacement's request and wait in the store as it stands; false: the job finished.
  bool join_in_store();
  void fill_join_holes(int64_t from);
  // After a StoreLost: connect again (within the store patience, else OutOfGroup) and
  // tell whether the store kept its keys; a restarted one resets what lived only in it.
  bool reconnect(const std::string& why);
  std::optional<Account> account_of(int rank);
  // This rank's account, for announcer(); `now`: also in the store at once (a new generation),
  // not only with the heartbeat's next beat (every window / 5).
  void publish(bool now = false);
  // The abort probe (Collectives::set_abort_probe): why the collective (or the forming) waited
  // in must end, or "": another member began re-forming, or a partition.
  std::string probe_reforming(std::chrono::steady_clock::duration waited);
  // The members this rank cannot reach while they beat, written down; why to abandon, or "".
  std::string check_partition();
  // `proposal` less the fewest members that leave no two unreachable from each other together
  // (the reports of generation `next`).
  std::vector<int> without_partitions(int64_t next, std::vector<int> proposal);
  // Whether this replacement reaches every member of the latest generation, from every job
  // rank's account as just read (this rank's own is not counted).
  bool members_reachable(const std::vector<std::optional<Account>>& accounts);
  // Whether job rank r is silent (heartbeat) or fenced.
  bool gone(int r);
  // The ranks whose address did not answer, all probed at once (probe_reach_all).
  static std::vector<int> silent_ones(const std::map<int, std::string>& addresses);

  // The abort probe's own connection, for while store_'s is lost: only the training thread
  // reconnects store_ (with a restart's bookkeeping), and it may be the one waiting in the
  // collective. Probes run on any waiting thread; one at a time uses it.
  struct Probe {
    explicit Probe(Collectives& collectives);
    std::mutex mutex;
    BoundedStore store;
    std::chrono::steady_clock::time_point next_connect;
  };

  Collectives& col_;
  IsSilent silent_;
  ReachListener reach_;  // this member's reach address, in its account
  BoundedStore store_;
  std::unique_ptr<Probe> probe_;
  std::chrono::milliseconds store_patience_;
  std::string incarnation_;
  bool rebuilt_ = false;  // the store restarted since this rank last formed a generation
  std::vector<StoreOutage> outages_;
  std::shared_ptr<Announcement> announcement_;
  std::atomic<int64_t> generation_{0};  // read by the abort probe on communication threads
  int64_t exchange_ = 0;                // collectives of this generation committed or aborted so far
  char last_outcome_ = '-';
  int64_t joins_seen_ = 0;  // join requests already taken in (or standing for a member)
  int source_ = 0;
  std::chrono::milliseconds patience_;
  std::chrono::milliseconds orphan_patience_;
  std::chrono::milliseconds partition_after_{0};
  // When the next partition check is due (steady_clock ticks): claimed by compare-and-swap, as
  // waits on several threads may probe at once.
  std::atomic<std::chrono::steady_clock::rep> next_partition_check_{0};
  struct {
    std::mutex mutex;  // partition checks run on whichever thread waits
    int64_t generation = -1;
    std::map<int, std::string> of;
  } addresses_;                                  // member_addresses()'s cache
  std::string unreachable_logged_;               // a replacement's last "cannot reach" line, said once
  std::optional<int64_t> unanswered_join_from_;  // the join count before an add whose answer was lost
  std::vector<int> newcomers_;
  std::string finished_result_;
  std::mutex fenced_mutex_;  // gone() runs on waiting threads too (partition checks)
  std::vector<int> fenced_;  // fence()'s, until a generation forms
};

}  // namespace ppu
