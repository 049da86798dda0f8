// SlicePlan: which elements of every parameter rank `rank` of K trains, and by how many ranks
// each element is trained (the count vector m of Algorithm 1). Slice index n = rank mod N.
//  - mode mlp:          rows [n*F/N, (n+1)*F/N) of every MLP up-projection (F = 4d) and the
//                       same columns of every down-projection; everything else is trained by all.
//  - mode mlp+heads:    additionally the output features of head group n of W_Q, W_K, W_V
//                       (rows [n*d/N, (n+1)*d/N) in PyTorch layout). W_O stays fully trainable.
//  - mode mlp+heads+wo: additionally the input features of W_O that head group n produces
//                       (columns [n*d/N, (n+1)*d/N)); Appendix A.2's ablation.
//  - mode horizontal:   the whole MLPs of layers [n*L/N, (n+1)*L/N), none of the other layers'
//                       (frozen: an empty range); Appendix A.2's horizontal ablation.
//  - mode heads:        only the Q/K/V rows of head group n (as mlp+heads); the MLPs are trained
//                       whole by every rank (the heads-only ablation).
//  - mode none:         every element trainable on every rank (N = 1).
// Every sliced element is trained by exactly K/N ranks, so m is constant per parameter.
// `jacobian` (slicing.jacobian, Appendix D) says which MLP slices carry the input gradient:
// it changes the backward, not what is trained. Invalid (K, N, model) combinations throw
// ConfigError naming the values. No LibTorch here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/model_spec.h"
#include "core/tensor_region.h"

namespace ppu {

// The region of a parameter this rank trains: whole, or [begin, end) along dim (empty = frozen
// on this rank).
struct ParamSlice : TensorRegion {
  ParamInfo param;
  int owners = 1;  // m: number of ranks that train each element of this parameter

  bool sliced() const { return !whole(); }
  bool frozen() const { return sliced() && end == begin; }
  int64_t trainable_numel() const;
};

class SlicePlan {
 public:
  // `jacobian`: see above.
  SlicePlan(const ModelSpec& model, SliceMode mode, int world_size, int slices, int rank,
            Jacobian jacobian = Jacobian::Full);
  // The plan of rank `rank` of `world_size`. A single process (world_size 1) with a config
  // planned for K = config.ranks > 1 ranks runs "solo": it trains slice 0 of that K-rank plan,
  // and, being the only owner of what it trains, normalises its deltas by m = 1.
  static SlicePlan from_config(const Config& config, int world_size, int rank);

  const std::vector<ParamSlice>& params() const { return params_; }
  const ParamSlice& find(const std::string& name) const;
  int slice_index() const { return rank_ % slices_; }
  int slices() const { return slices_; }
  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  SliceMode mode() const { return mode_; }
  Jacobian jacobian() const { return jacobian_; }

  int64_t trainable_parameters() const;
  int64_t total_parameters() const;
  // Fractions of the attention input projections, of W_O and of the MLPs whose weight gradient
  // this rank computes (rho_attn and rho_mlp of Appendix C; rho_out is 1 unless W_O is sliced),
  // averaged over layers; and the fraction of the MLP hidden features whose path carries the
  // input gradient (1 for the full Jacobian, 1/N or 2/N for Appendix D's variants).
  double rho_attn() const;
  double rho_out() const;
  double rho_mlp() const;
  double rho_mlp_input() const;

 private:
  std::vector<ParamSlice> params_;
  SliceMode mode_;
  Jacobian jacobian_;
  int world_size_, slices_, rank_;
};

}  // namespace ppu
