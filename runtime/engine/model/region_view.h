// region_view: the view of a tensor that a TensorRegion (core/tensor_region.h) names — the tensor
// itself when the region is whole, else its narrow along the region's dimension.
#pragma once

#include <torch/torch.h>

#include "core/tensor_region.h"

namespace ppu {

inline torch::Tensor region_view(const torch::Tensor& t, const TensorRegion& r) {
  return r.whole() ? t : t.narrow(r.dim, r.begin, r.length());
}

}  // namespace ppu
