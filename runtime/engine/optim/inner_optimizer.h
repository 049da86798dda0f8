// InnerOptimizer: the local optimiser of Algorithm 1 (lines 8–10) over this rank's trainable
// tensors only — AdamW (paper defaults) or plain SGD — with the warm-up + cosine schedule and
// optional gradient-norm clipping (inner.grad_clip over this rank's trainable tensors).
// Weight decay applies where `decay` says (core/config.h applies_weight_decay: matrices, and
// the embedding / norms per inner.decay_embedding / inner.decay_norms). Optimiser state
// exists only for the trainable slices because only they are handed to LibTorch's optimiser.
// AdamW's update runs fused, one pass per parameter (engine/optim/fused_adamw.h), on the state of
// torch::optim::AdamW, so checkpoints are LibTorch's format.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "core/config.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {
class Collectives;
}

namespace ppu {

class InnerOptimizer {
 public:
  // decay[i]: whether trainable[i] gets weight decay; empty = tensors of rank >= 2 only.
  // masters: empty, or one fp32 tensor per trainable tensor, of its shape (mixed precision).
  InnerOptimizer(const InnerConfig& config, int64_t total_steps, const std::vector<torch::Tensor>& trainable,
                 const std::vector<bool>& decay = {}, const std::vector<torch::Tensor>& masters = {});

  // Clips, sets the scheduled learning rate for `step` (0-based), steps, and clears grads.
  // Returns the learning rate used.
  double step(int64_t step);
  void zero_grad();

  // Bytes of optimiser state tensors that exist right now.
  int64_t state_bytes() const;

  // Its checkpoint section (LibTorch's serialisation of the optimiser): writer() as `copy` says
  // (Cloned: the state tensors are copied now, and the writer builds a second optimiser over the
  // same parameter groups holding the copies when it runs), save() now.
  ArchiveWriter writer(TensorCopy copy) const;
  void save(torch::serialize::OutputArchive& archive) const { writer(TensorCopy::Shared)(archive); }
  void load(torch::serialize::InputArchive& archive);
  // What save() writes for this optimiser with no state yet (a rank's fresh state): the same
  // parameter groups, so load() takes it on any rank of this plan. The writer may run on any
  // thread, at any time (it holds the groups; their parameters serve only as keys).
  ArchiveWriter fresh_writer() const;
  void save_fresh(torch::serialize::OutputArchive& archive) const { fresh_writer()(archive); }

  // Live recovery (network.replacement_inner_state coowner): group rank `root`'s AdamW state (per
  // trainable tensor: step, exp_avg, exp_avg_sq) to every member of `collectives`' group, which
  // all call it with the same root; `adopt`: this rank replaces its own state with it (it must
  // have root's tensor shapes: a co-owner of root's slice). Sizes travel first, so members of
  // other slices take part without matching shapes. SGD has no state: nothing is sent.
  void share_state(Collectives& collectives, int root, bool adopt);
  // FNV-1a 64 over every tensor's step and moments in tensor order (no state: step 0, no
  // moments), so that logs and tests can compare two ranks' inner states.
  uint64_t state_digest() const;

 private:
  void fused_step(torch::optim::AdamW& adamw);
  bool master_grad(size_t i);
  static float clip_factor(const std::vector<torch::Tensor>& params, double max_norm);
  // AdamW's state of params_[i], or null (none yet, or SGD).
  torch::optim::AdamWParamState* adamw_state(size_t i) const;

  InnerConfig config_;
  int64_t total_steps_;
  std::vector<torch::Tensor> params_;                      // what the optimiser steps: the masters, else the leaves
  std::vector<torch::Tensor> leaves_;                      // mixed precision: the bf16 leaves the gradients land in
  std::unordered_map<const void*, int64_t> master_index_;  // master's TensorImpl -> index
  double grad_scale_ = 1.0;                                // mixed precision: this step's clipping factor
  float clip_scale_ = 1.0f;  // fp32 AdamW: this step's clipping factor, applied inside the AdamW pass
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace ppu
