#include "core/slice_plan.h"

#include <stdexcept>

namespace ppu {

int64_t ParamSlice::trainable_numel() const {
  if (!sliced()) return param.numel();
  return param.numel() / param.shape[dim] * (end - begin);
}

SlicePlan::SlicePlan(const ModelSpec& model, SliceMode mode, int world_size, int slices, int rank, Jacobian jacobian)
    : mode_(mode),
      jacobian_(jacobian),
      world_size_(world_size),
      slices_(mode == SliceMode::None ? 1 : slices),
      rank_(rank) {
  check_slicing(model, mode, world_size, slices_);
  if (rank < 0 || rank >= world_size)
    throw ConfigError("RANK=" + std::to_string(rank) + " is outside [0, WORLD_SIZE=" + std::to_string(world_size) +
                      ")");
  const bool heads = mode == SliceMode::MlpHeads || mode == SliceMode::MlpHeadsWo || mode == SliceMode::Heads;
  const bool mlp_sliced = mode != SliceMode::Heads;

  const int n_idx = slice_index();
  const int sliced_owners = world_size / slices_;
  for (const auto& p : parameter_layout(model)) {
    ParamSlice s{{}, p};
    s.owners = world_size;
    auto slice_along = [&](int dim, int64_t extent) {
      s.dim = dim;
      s.begin = n_idx * extent / slices_;
      s.end = (n_idx + 1) * extent / slices_;
      s.owners = sliced_owners;
    };
    const bool mlp = p.role == ParamRole::MlpUp || p.role == ParamRole::MlpDown;
    if (slices_ > 1 && mode == SliceMode::Horizontal) {
      if (mlp) {
        // Whole MLPs of this rank's layer group; the other layers' MLPs are frozen (an empty
        // range). Either way K/N ranks train each element.
        const int per_group = model.layers / slices_;
        if (p.layer / per_group != n_idx) s.dim = 0;  // begin = end = 0
        s.owners = sliced_owners;
      }
    } else if (slices_ > 1) {
      switch (p.role) {
        case ParamRole::MlpUp:
          if (mlp_sliced) slice_along(0, p.shape[0]);
          break;
        case ParamRole::MlpDown:
          if (mlp_sliced) slice_along(1, p.shape[1]);
          break;
        case ParamRole::AttnQ:
        case ParamRole::AttnK:
        case ParamRole::AttnV:
          if (heads) slice_along(0, p.shape[0]);
          break;
        case ParamRole::AttnOut:
          if (mode == SliceMode::MlpHeadsWo) slice_along(1, p.shape[1]);  // W_O's inputs = head outputs
          break;
        default: break;
      }
    }
    params_.push_back(s);
  }
}

SlicePlan SlicePlan::from_config(const Config& config, int world_size, int rank) {
  const SliceMode mode = config.effective_slices() == 1 ? SliceMode::None : config.slicing.mode;
  if (world_size > 1 || config.effective_slices() == 1)
    return {config.model, mode, world_size, config.effective_slices(), rank, config.slicing.jacobian};
  SlicePlan solo(config.model, mode, config.ranks, config.effective_slices(), 0, config.slicing.jacobian);
  for (auto& p : solo.params_) p.owners = 1;
  solo.world_size_ = 1;
  return solo;
}

const ParamSlice& SlicePlan::find(const std::string& name) const {
  for (const auto& p : params_)
    if (p.param.name == name) return p;
  throw std::out_of_range("no parameter named '" + name + "'");
}

int64_t SlicePlan::trainable_parameters() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.trainable_numel();
  return n;
}

int64_t SlicePlan::total_parameters() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.param.numel();
  return n;
}

double SlicePlan::rho_attn() const {
  const bool heads = mode_ == SliceMode::MlpHeads || mode_ == SliceMode::MlpHeadsWo || mode_ == SliceMode::Heads;
  return heads ? 1.0 / slices_ : 1.0;
}
double SlicePlan::rho_out() const { return mode_ == SliceMode::MlpHeadsWo ? 1.0 / slices_ : 1.0; }
// Horizontal: 1/N of the layers compute their whole MLP gradient, the rest none; the FLOPs are
// linear in rho per layer, so the layer average 1/N gives the same total.
double SlicePlan::rho_mlp() const {
  return mode_ == SliceMode::None || mode_ == SliceMode::Heads ? 1.0 : 1.0 / slices_;
}
double SlicePlan::rho_mlp_input() const {
  if (mode_ == SliceMode::None || mode_ == SliceMode::Horizontal || mode_ == SliceMode::Heads ||
      jacobian_ == Jacobian::Full)
    return 1.0;
  return (jacobian_ == Jacobian::Slice ? 1.0 : 2.0) / slices_;
}

}  // namespace ppu
