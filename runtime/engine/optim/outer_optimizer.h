// OuterOptimizer: the global parameters θ and the outer step of Algorithm 1 (lines 11–14),
// one streaming fragment at a time. For fragment f:
//   Δ_k = θ_k − θ on this rank's trainable elements, 0 elsewhere        (line 11)
//   Δ   = (Σ_k Δ_k) ⊙ 1/m, m = number of ranks training each element    (line 13)
//   θ   ← OuterOpt(θ, Δ): Nesterov SGD on the pseudo-gradient −Δ, or θ + Δ ("average")
//   θ_k ← θ for the whole fragment (frozen slices pick up the other ranks' progress)
// θ and the Nesterov momentum are fp32 tensors in host memory (or, with outer.host_state_dir,
// in file-backed mappings: engine/state/host_store.h); only the fragment being
// synchronised is copied to and from the model's device. With train.dtype bf16, θ_k's
// trainable elements are the model's fp32 masters (deltas are taken from them), frozen ones the
// bf16 weights (their delta is 0 anyway), and θ_k ← θ writes the masters and the rounded
// bf16 working weights.
// Overlap (outer.overlap_steps = τ > 0, Streaming DiLoCo's τ): begin() sends the delta and
// training goes on; finish() τ steps later applies the outer step and merges as Streaming
// DiLoCo does, θ_k ← α·θ_k + (1−α)·θ with α = outer.overlap_alpha, θ_k being the local values
// after the τ steps and θ the new global ones (α = 0: adopt θ, dropping the τ local steps).
// Without overlap θ_k ← θ. The exchange is delta_exchange (bytes sent and received are
// counted there); with outer.error_feedback each fragment keeps its encoding residuals.
// average(f) is the end-of-training finish (outer.final_sync: average): the same exchange and
// count normalisation, then θ ← θ + Δ with no outer learning rate and no momentum (the
// momentum buffer is left as it was), and θ_k ← θ.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "core/wire_plan.h"
#include "engine/comm/collectives.h"
#include "engine/comm/delta_exchange.h"
#include "engine/model/transformer.h"
#include "engine/state/host_store.h"

namespace ppu {

struct SyncResult {
  int64_t bytes_sent = 0;       // bytes this rank put on the wire
  int64_t bytes_received = 0;   // bytes this rank took off the wire
  double seconds = 0;           // wall time the training thread spent in the sync, waiting included
  double wait_seconds = 0;      // of which blocked waiting for the exchange to complete
  double exchange_seconds = 0;  // wall time of the exchange itself (overlapped or not)
};

class OuterOptimizer {
 public:
  // `collective`: network.collective, the all-reduce schedule.
  OuterOptimizer(const OuterConfig& config, Transformer& model, const StreamingSchedule& schedule,
                 Collectives& collectives, Collective collective = Collective::Ring);

  // A synchronisation whose exchange is in flight.
  struct InFlight {
    int fragment = -1;
    torch::Tensor flat;           // the deltas, then their sum
    bool overlapped = false;      // merge with α instead of adopting θ
    bool plain_average = false;   // θ ← θ + Δ instead of the outer optimiser
    std::vector<double> weights;  // quorum sync: each job rank's weight (set_weights); empty: counts
    std::function<AllreduceStats()> wait;
    SyncResult result;
  };

  SyncResult sync(int fragment);     // begin + finish, no overlap
  SyncResult average(int fragment);  // the final plain average, no overlap
  InFlight begin(int fragment, bool overlapped);
  SyncResult finish(InFlight& sync);  // complete + apply
  // Waits for the exchange (throws PeerError), then the outer step of lines 13–14. Live
  // recovery applies only an exchange that every member completed (LiveGroup::commit).
  void complete(InFlight& sync);
  SyncResult apply(InFlight& sync);

  // Live recovery: the slice plans of the ranks in the group now (all K: the configured owner
  // counts). With fewer, an element's delta is divided by its live owners, and an element
  // without any keeps its value and its momentum.
  void set_owners(std::vector<SlicePlan> live_plans, int world_size);
  // Quorum sync (outer.sync_mode quorum, docs/QUORUM_SYNC.md): the plans of all K job ranks,
  // once; then before each begin(), each job rank's weight (the share of the fragment's window
  // it trained). Line 13 becomes the weighted mean Δ = (Σ_k w_k Δ_k) ⊙ 1/W, W = Σ of the
  // weights of each element's (live) owners: this rank scales its delta by its own weight before
  // the exchange. With every weight 1 it is the count normalisation above, bit for bit (the
  // same code runs); an element whose owners all weigh 0 keeps its value and momentum.
  void set_job_plans(std::vector<SlicePlan> plans) { job_plans_ = std::move(plans); }
  void set_weights(std::vector<double> by_job_rank) { weights_ = std::move(by_job_rank); }
  // The smallest fraction of an element's owners that are live (1 with every rank).
  double min_coverage() const { return min_coverage_; }
  // θ and the momentum of group rank `root`, on every rank of the group (a collective: the
  // others hold the same values already, except newcomers). `adopt` (a newcomer): also θ_k ← θ.
  void share_state(Collectives& collectives, int root, bool adopt);

  // A digest of fragment `fragment`'s θ and momentum (FNV-1a 64 over their fp32 bytes): the
  // same on every rank unless one has drifted (a flipped bit, a bug). The trainer agrees on it
  // before every sync (engine/train/theta_guard.h).
  uint64_t fragment_digest(int fragment) const;
  // Fragment `fragment`'s θ and momentum of group rank `root` on every rank (a collective).
  // θ_k, this rank's local progress, is left as it is: its next delta is taken from the
  // repaired θ.
  void resync_fragment(Collectives& collectives, int fragment, int root);
  // Quorum sync's sitting out: fragment `fragment`'s θ and momentum of group rank `root` on every
  // rank of the group (a collective). A rank that `rejoins` (it sat out some of the fragment's
  // outer steps, its θ is older) re-bases its local progress on the new θ, θ_k ← θ + (θ_k −
  // θ_old), or with `keep_work` false drops it, θ_k ← θ; the others' θ_k stay as they are.
  void catch_up(int fragment, int root, bool rejoins, bool keep_work);
  const std::vector<torch::Tensor>& global() const { return global_; }
  int64_t momentum_bytes() const;
  int64_t global_bytes() const;

  // Global θ and momentum (same on every rank): writer() as `copy` says, save() now.
  ArchiveWriter writer(TensorCopy copy) const;
  void save(torch::serialize::OutputArchive& archive) const { writer(TensorCopy::Shared)(archive); }
  void load(torch::serialize::InputArchive& archive);
  // This rank's error-feedback residuals (outer.error_feedback): rank-local checkpoint state.
  ArchiveWriter feedback_writer(TensorCopy copy) const;
  void load_feedback(torch::serialize::InputArchive& archive);

 private:
  OuterConfig config_;
  Transformer& model_;
  const StreamingSchedule& schedule_;
  Collectives& collectives_;
  WirePlan wire_;                        // what the delta exchange sends (core/wire_plan)
  HostStore host_;                       // where global_ and momentum_ live (memory or files)
  std::vector<torch::Tensor> global_;    // fp32, host
  std::vector<torch::Tensor> momentum_;  // fp32, host; allocated on a fragment's first sync
  std::vector<FeedbackState> feedback_;  // per fragment, with outer.error_feedback
  std::vector<SlicePlan> live_plans_;    // empty: every rank is live
  double min_coverage_ = 1;
  std::vector<SlicePlan> job_plans_;  // quorum sync: every job rank's
  std::vector<double> weights_;       // quorum sync: by job rank; empty: every weight 1
  // Live owners of each element of `piece` (fp32, the piece's shape); undefined with every rank.
  torch::Tensor live_owners(const FragmentPiece& piece) const;
  // The weights of each element's live owners, summed (fp32, the piece's shape).
  torch::Tensor weighted_owners(const FragmentPiece& piece, const std::vector<double>& weights) const;
};

}  // namespace ppu
