#include "engine/model/stand_in_part.h"

#include "engine/model/region_view.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

ArchiveWriter model_as_theta(const std::vector<ParamInfo>& layout, const std::vector<torch::Tensor>& theta,
                             const SlicePlan& plan, torch::ScalarType dtype, TensorCopy copy) {
  TORCH_CHECK(theta.size() == layout.size() && plan.params().size() == layout.size(),
              "model_as_theta: one θ tensor and one slice per parameter");
  SavedTensors saved(copy);
  for (size_t i = 0; i < layout.size(); ++i) {
    const auto host = theta[i].detach().to(torch::kCPU, torch::kFloat32);
    saved.add_own(checkpoint_key::model_weight(layout[i].name), host.to(dtype, false, /*copy=*/true));
    if (dtype == torch::kBFloat16)
      saved.add(checkpoint_key::model_master(layout[i].name), region_view(host, plan.params()[i]).contiguous());
  }
  return std::move(saved).writer();
}

}  // namespace ppu
