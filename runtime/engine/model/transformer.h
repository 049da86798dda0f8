// Transformer: the decoder-only language model trained by every rank — token embedding tied
// with the output head, rotary position embeddings, pre-norm blocks with multi-head causal
// attention and a 4d MLP (ReLU or GELU), causal LM loss. No biases in linear layers.
// Parameters follow `parameter_layout` (core/model_spec.h). The Q/K/V and MLP projections go
// through PartialLinear, so slices frozen by the SlicePlan get no weight gradient, no grad
// buffer and no optimiser state; every other parameter is trainable on every rank. With
// slicing.jacobian slice / slice+random (Appendix D) only this rank's MLP slice (plus one
// other slice per layer, drawn by begin_step from (seed, rank, step, layer)) carries the
// input gradient through the MLPs. A view over given tensors (the global θ) evaluates them
// without copying.
// Mixed precision (train.dtype bf16, §3.1): the working weights are bf16 and so are the
// activations and gradients; the trainable slices alone also have an fp32 master copy
// (masters(), what the inner optimiser steps); frozen slices exist only in bf16. Weights are
// initialised in fp32, rounded to bf16, and the masters start as those rounded values, so every
// rank starts from the same θ whatever it trains.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "core/model_spec.h"
#include "core/slice_plan.h"
#include "engine/model/partial_linear.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

class Transformer {
 public:
  // Deterministic initialisation from `seed` (identical on every rank).
  // `dtype`: the compute dtype, kFloat32 or kBFloat16 (then fp32 masters of the trainable slices).
  Transformer(const ModelSpec& spec, SlicePlan plan, uint64_t seed, torch::Device device = torch::kCPU,
              torch::ScalarType dtype = torch::kFloat32);
  // Evaluation view over `weights` (layout order, e.g. the outer optimiser's global θ): nothing
  // trainable; tensors already on `device` are used as they are (no copy), so the view sees
  // later in-place updates.
  Transformer(const ModelSpec& spec, const std::vector<torch::Tensor>& weights, torch::Device device = torch::kCPU);

  // Draws the k+random slices of inner step `step` (slicing.jacobian slice+random; a no-op
  // otherwise). Without a call, step 0's draw is used.
  void begin_step(int64_t step);
  // The extra slice g of `layer` whose path carries the input gradient besides this rank's own
  // (slice+random), or -1.
  int jacobian_random_slice(int layer) const;

  // tokens: int64 [B, S+1]; returns the mean next-token cross-entropy (nats) over B*S targets,
  // an fp32 scalar in either dtype.
  torch::Tensor loss(const torch::Tensor& tokens) const;
  // The cross-entropy of the tied output head over `chunk_tokens` tokens at a time
  // (chunked_cross_entropy): the full [B*S, vocab] fp32 logits never exist. 0: one plain
  // matmul + cross_entropy (the default; in bf16 the logits are cast to fp32 for it).
  void set_loss_chunk(int64_t chunk_tokens) { loss_chunk_ = chunk_tokens; }
  int64_t loss_chunk() const { return loss_chunk_; }

  // Full activation recomputation: each block keeps only its input during the forward and
  // runs again inside the backward (per-block checkpointing, §3.1). Same gradients, less memory.
  void set_recompute(bool on) { recompute_ = on; }
  // Fused attention (at::scaled_dot_product_attention, LibTorch >= 2) instead of the explicit
  // matmul/softmax. Default: on for CUDA models where LibTorch has SDPA; off on CPU, so that CPU
  // runs stay bit-identical across LibTorch versions and MatmulFlopCounter sees every matmul.
  // Ignored (explicit path) on LibTorch 1.x.
  void set_fused_attention(bool on) { fused_attention_ = on; }
  bool fused_attention() const;
  // One pre-norm block: x + attn(ln1(x)), then + mlp(ln2(.)).
  torch::Tensor block(const torch::Tensor& x, int layer) const;
  // The block's two summands, h = x + attn(ln1(x)) and m = mlp(ln2(h)), with m's last product
  // (the down projection) left uncomputed: roots for a backward of the block that never reads
  // its output (dL/dh and dL/dm are both dL/dy). Recomputation runs this instead of block().
  std::pair<torch::Tensor, torch::Tensor> block_for_backward(const torch::Tensor& x, int layer) const;

  // Full parameter tensors in layout order (frozen parts included): sync, checkpoints, checksums.
  const std::vector<torch::Tensor>& weights() const { return weights_; }
  // Leaves the inner optimiser updates (slices are views into weights()), in layout order.
  const std::vector<torch::Tensor>& trainable() const { return trainable_; }
  // bf16: per parameter, the fp32 master of its trainable range (the trainable leaf's shape,
  // contiguous; zero elements when frozen). fp32: empty (the weights are their own masters).
  const std::vector<torch::Tensor>& masters() const { return masters_; }
  torch::ScalarType dtype() const { return dtype_; }
  bool mixed_precision() const { return !masters_.empty(); }
  // The parameters as fp32 tensors, masters where trainable (bf16: a fresh copy per parameter
  // unless its master is the whole tensor; fp32: weights() themselves).
  std::vector<torch::Tensor> fp32_weights() const;
  // Writes fp32 `values` of `region` of parameter i into the working weight (rounded in bf16)
  // and, where trainable, the master.
  void store_fp32(size_t i, const TensorRegion& region, const torch::Tensor& values);
  // The fp32 values of that region: the master where trainable, the working weight elsewhere.
  torch::Tensor load_fp32(size_t i, const TensorRegion& region) const;
  // Its checkpoint section (engine/state/checkpoint_format.h): every weight and, in bf16, every fp32
  // master. load() throws CheckpointError naming a parameter that is missing or of another shape.
  // writer(): that section as `copy` says; save(): written now.
  ArchiveWriter writer(TensorCopy copy) const;
  void save(torch::serialize::OutputArchive& archive) const { writer(TensorCopy::Shared)(archive); }
  void load(torch::serialize::InputArchive& archive);
  const std::vector<ParamInfo>& layout() const { return layout_; }
  const SlicePlan& plan() const { return plan_; }
  const ModelSpec& spec() const { return spec_; }

 private:
  torch::Tensor attention(const torch::Tensor& x, int layer) const;
  // [B, S, 3·h·hd]: Q | K | V of layer l, heads-major within each.
  torch::Tensor project_qkv(const torch::Tensor& x, int layer) const;
  // `product` false: the down projection's output is left uninitialised (block_for_backward).
  torch::Tensor mlp(const torch::Tensor& x, int layer, bool product = true) const;
  std::pair<torch::Tensor, torch::Tensor> block_parts(const torch::Tensor& x, int layer, bool product) const;
  // x·cos + rotate_half(x)·sin over x's last dimension; cos and sin broadcast against x.
  static torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  void init_tables(torch::Device device);
  // Puts layer l's W_q, W_k, W_v in one [3d, d] buffer (qkv_[l]) whose row blocks become the
  // three parameters, when their slicing allows (stackable): the attention then projects in
  // one GEMM. The evaluation view keeps three GEMMs (its tensors are the caller's).
  void stack_qkv(int layer);
  // Where the master of parameter i meets `region` of it: the overlap's region within `region`'s
  // view (in_region) and within the master (in_master); nullopt when none.
  struct MasterOverlap {
    TensorRegion in_region, in_master;
  };
  std::optional<MasterOverlap> master_overlap(size_t i, const TensorRegion& region) const;
  const torch::Tensor& w(int layer, BlockParam p) const { return weights_[block_param_index(layer, p)]; }
  const WeightSlice& s(int layer, BlockParam p) const { return slices_[block_param_index(layer, p)]; }

  ModelSpec spec_;
  SlicePlan plan_;
  std::vector<ParamInfo> layout_;
  std::vector<torch::Tensor> weights_;
  std::vector<WeightSlice> slices_;
  std::vector<torch::Tensor> trainable_;
  std::vector<torch::Tensor> masters_;  // bf16 only
  std::vector<torch::Tensor> qkv_;      // per layer: stacked W_q, W_k, W_v (or undefined)
  torch::ScalarType dtype_ = torch::kFloat32;
  int64_t loss_chunk_ = 0;
  torch::Tensor rope_cos_, rope_sin_;      // [S, head_dim]
  torch::Tensor rope_cos_q_, rope_sin_q_;  // the same times 1/sqrt(head_dim), for queries
  torch::Tensor causal_bias_;              // [S, S]: 0 on and below the diagonal, -inf above
  bool recompute_ = false;
  bool fused_attention_ = false;
  uint64_t seed_ = 0;
  std::vector<int> random_slice_;  // per layer, slice+random only
};

}  // namespace ppu
