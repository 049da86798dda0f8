// Collectives: this rank's membership in the job — rendezvous through c10d's TCPStore at
// MASTER_ADDR:MASTER_PORT and a Gloo process group (CPU tensors). With WORLD_SIZE = 1 there
// is no process group and every collective is the identity. Every collective waits at most
// `timeout`; a dead or hung peer surfaces as PeerError (exit code 3), never as a hang.
// The store is rank 0's unless `external_store` (PPU_EXTERNAL_STORE: ppu-rendezvous serves it
// and it outlives every rank). Live recovery re-forms the group: reform(members, generation)
// builds a new Gloo group of those job ranks over the store's keys of that generation, with
// group ranks in job-rank order; rank()/world_size() are then the group's, job_rank() stays.
// abort() makes every wait in progress or to come throw PeerError until the next reform (a
// silent peer would otherwise hold a collective until the timeout); a replaced group is kept,
// not destroyed, since its threads may still be blocked on a peer that never answers.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/exit_status.h"
#include "core/job_contract.h"
#include "engine/comm/progress_clock.h"

namespace c10d {
class ProcessGroupGloo;
class Store;
class Work;
}  // namespace c10d

namespace ppu {
class NcclGroup;  // defined in collectives.cpp, only in CUDA builds
}

namespace ppu {

// A peer died or a collective timed out (exit 3: the gang is restarted).
class PeerError : public PeerFailure {
 public:
  using PeerFailure::PeerFailure;
};

struct RendezvousInfo {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = contract::kRendezvousPort;
  bool external_store = false;  // PPU_EXTERNAL_STORE=1: no rank serves the store
};

// Reads RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun-compatible; defaults 0 of 1) and
// PPU_EXTERNAL_STORE.
RendezvousInfo rendezvous_from_env();

// The CUDA device of this rank's NCCL group (Collectives' `nccl_device`), or -1 for none. NCCL
// needs one GPU per rank: only when this node's ranks (LOCAL_WORLD_SIZE, as torchrun sets it;
// else all `world_size` ranks) fit on its GPUs; otherwise deltas and gradients go through Gloo
// via the host. Live recovery re-forms Gloo groups only: its ranks stay on Gloo.
int nccl_group_device(const torch::Device& device, int world_size, bool live_recovery);

class Collectives {
 public:
  // `nccl_device` >= 0: also form an NCCL group on that CUDA device (builds with PPU_WITH_NCCL
  // only, one GPU per rank); CUDA tensors then go through NCCL. Otherwise CUDA tensors are
  // copied to the host and reduced by Gloo (several ranks sharing one GPU, tests).
  Collectives(const RendezvousInfo& info, std::chrono::milliseconds timeout, int nccl_device = -1);
  ~Collectives();

  int rank() const { return rank_; }              // in the current group
  int world_size() const { return world_size_; }  // of the current group
  const RendezvousInfo& rendezvous() const { return info_; }
  int job_rank() const { return info_.rank; }
  int job_size() const { return info_.world_size; }
  const std::vector<int>& members() const { return members_; }  // job ranks of the group, ascending
  std::chrono::milliseconds timeout() const { return timeout_; }
  // This rank's progress: every wait on the peers (collectives, forming a group) counts as
  // progress (heartbeat.h); the trainer ticks it for its own work.
  ProgressClock& progress() { return progress_; }
  // The rendezvous store (null with WORLD_SIZE = 1); thread-safe for its own requests.
  c10::intrusive_ptr<c10d::Store> store() const;
  // A new connection to the store at MASTER_ADDR:MASTER_PORT in place of the current one (which
  // may be blocked on a store that died or stopped answering: it is left to its requests). One
  // attempt of about a second; throws PeerError when the store does not accept it.
  void reconnect_store();
  // A new connection to the same store for the caller alone, on the same terms (one attempt;
  // PeerError when refused); the shared one stays as it is.
  c10::intrusive_ptr<c10d::Store> connect_store() const;

  // A new group of `members` (job ranks, ascending, this rank among them) over the keys of
  // `generation`; clears abort(). Blocks until every member has joined or the connect timeout
  // (set_connect_timeout; the collective timeout until set): a member that died after it was
  // listed must not hold the others for network.timeout_s. Abortable like a collective from its
  // start: abort_for() a new member (the heartbeat finds it silent), the abort probe (another
  // member gave up on this generation) or `give_up` (asked as often, "" to go on) ends it at once
  // with PeerError.
  void reform(const std::vector<int>& members, int64_t generation, const std::function<std::string()>& give_up = {});
  // Quorum sync's sitting out (docs/QUORUM_SYNC.md): collectives over some of the whole group's
  // members. narrow(members) (job ranks, ascending, this rank among them, all of them members of
  // the whole group) sends every collective from here on through a group of those ranks: formed
  // over the store the first time the set is asked for (every one of them asks at the same
  // point, as for any collective) and kept for reuse until the next reform. rank(),
  // world_size() and members() are the narrowed group's meanwhile; narrow() to every member of
  // the whole group goes back to it. Gang recovery only: a re-formable group (live recovery)
  // refuses it (logic_error); CUDA tensors then go through Gloo via the host, not NCCL.
  void narrow(const std::vector<int>& members);
  bool narrowed() const { return !whole_.members.empty(); }
  // Test-only (FaultHooks' die-forming): called as reform() begins, with its generation.
  void set_before_reform(std::function<void(int64_t generation)> hook) { before_reform_ = std::move(hook); }
  // Also the store client's timeout: Gloo's rendezvous waits on the store for a member's address,
  // which a member that died before publishing it never writes.
  void set_connect_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds connect_timeout() const {
    return connect_timeout_.count() > 0 ? connect_timeout_ : timeout_;
  }
  // Every wait now or later throws PeerError(`why`) until the next reform. Any thread.
  void abort(const std::string& why);
  // The same, only while `job_rank` is a member of the current group (a late report about a
  // rank already left out changes nothing).
  void abort_for(int job_rank, const std::string& why);
  // Whether `job_rank` is a member of the current group. Any thread.
  bool is_member(int job_rank) const;
  bool aborted() const { return aborted_; }
  // Asked every 50 ms by a wait in a re-formable group, with how long it has waited: a non-empty
  // answer aborts it (a peer has begun re-forming the group, or a member cannot be reached).
  // Set before the first collective.
  using AbortProbe = std::function<std::string(std::chrono::steady_clock::duration waited)>;
  void set_abort_probe(AbortProbe probe) { abort_probe_ = std::move(probe); }
  // An external store already holds a live group of this job: this process is a replacement
  // and formed no group yet (LiveGroup::join forms one).
  bool joining() const { return joining_; }

  // Waits for a collective started by an *_async call; throws PeerError.
  using Pending = std::function<void()>;

  bool has_nccl() const { return nccl_ != nullptr; }

  // In-place SUM over ranks of a contiguous tensor (CPU, or CUDA: see the constructor).
  void allreduce_sum(torch::Tensor& tensor) { allreduce_sum_async(tensor)(); }
  Pending allreduce_sum_async(torch::Tensor& tensor);
  // `tensor` of group rank `root` on every rank (contiguous CPU tensor).
  void broadcast(torch::Tensor& tensor, int root);
  // Every rank's `tensor` (same shape and dtype everywhere), in rank order.
  std::vector<torch::Tensor> allgather(const torch::Tensor& tensor);
  // Fills `out` (resized to world_size) once the returned Pending has been called.
  Pending allgather_async(const torch::Tensor& tensor, std::vector<torch::Tensor>& out);
  void barrier();

  // Point-to-point on the Gloo group (contiguous CPU tensors): posts the operation and returns
  // a Pending that waits for it. Tags keep concurrent messages between two ranks apart.
  // Safe to call from a communication thread while the training thread runs collectives.
  Pending send(torch::Tensor& tensor, int dst, int tag);
  Pending recv(torch::Tensor& tensor, int src, int tag);
  // Numbers the all-reduces built from send/recv (compressed_allreduce); every rank calls it
  // in the same order, from the training thread.
  uint32_t next_sequence() { return sequence_++; }

 private:
  void wait(const char* what, const std::function<void()>& op);
  // Posts a collective (`post`, as wait()); an aborted re-formable group refuses it with
  // PeerError: no new work goes to a group being abandoned, where a fenced peer would wait for it.
  void start(const char* what, const std::function<void()>& post);
  // Waits for `work`; in a re-formable group abort() ends the wait too. Throws PeerError.
  void wait_for(const char* what, const c10::intrusive_ptr<c10d::Work>& work);
  // Runs `blocking` on a detached thread and waits for it; abort() (and the abort probe, and
  // `give_up` when given) end the wait with PeerError("<what> abandoned: ..."), leaving the
  // thread to finish on its own. Rethrows what `blocking` threw.
  void wait_abortably(const char* what, std::function<void()> blocking,
                      const std::function<std::string()>& give_up = {});
  void form(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size);
  // With an external store: whether this process replaces a rank of a running live group
  // (the first-group marker exists) rather than starting the job with the others (every rank
  // has checked in). Waits for one of the two, up to the timeout: a store restarted under a
  // live job lacks the marker until a member's heartbeat writes it again (a fifth of a window
  // after it reconnects), so one look would take a replacement for a first rank.
  bool is_replacement();
  // An elastic job's desired size as the store holds it now, else the job's size.
  int first_group_size();
  int first_size_ = 0;  // the first group's size as decided (is_replacement)
  // Whether collectives go through a group (false: a single-rank job); throws PeerError for a
  // rank of a larger job that has none now.
  bool has_group() const;

  RendezvousInfo info_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds connect_timeout_{0};  // 0: timeout_
  mutable std::mutex store_mutex_;                // store_ changes on reconnect_store()
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_ = 0, world_size_ = 1;
  std::vector<int> members_;  // under abort_mutex_ while it changes
  bool joining_ = false;
  bool abortable_ = false;  // a re-formable group (live recovery): waits watch abort()
  AbortProbe abort_probe_;
  std::function<void(int64_t)> before_reform_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mutex_;
  std::string abort_reason_;
  // The Gloo group itself, not its c10d::ProcessGroup base: in LibTorch 2.x Gloo is a
  // c10d::Backend, in 1.13 a ProcessGroup; its collectives have the same signatures in both.
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::unique_ptr<NcclGroup> nccl_;
  uint32_t sequence_ = 0;
  // narrow(): a group of some members and its own all-reduce numbering, by its members; and the
  // whole group's while narrowed (members empty: not narrowed).
  struct Group {
    c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
    int rank = 0, size = 1;
    std::vector<int> members;
    uint32_t sequence = 0;
  };
  std::map<std::vector<int>, Group> narrow_groups_;
  Group whole_;
  int64_t generation_ = 0;  // of the whole group (reform)
  Group take_current();
  void use(Group group);
  ProgressClock progress_;
};

}  // namespace ppu
