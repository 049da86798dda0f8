#include "engine/model/stand_in_part.h"

#include "engine/model/region_view.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

void write_model_as_theta(torch::serialize::OutputArchive& archive, const std::vector<ParamInfo>& layout,
                          const std::vector<torch::Tensor>& theta, const SlicePlan& plan, torch::ScalarType dtype,
                          TensorCopy copy) {
  TORCH_CHECK(theta.size() == layout.size() && plan.params().size() == layout.size(),
              "write_model_as_theta: one θ tensor and one slice per parameter");
  for (size_t i = 0; i < layout.size(); ++i) {
    const auto host = theta[i].detach().to(torch::kCPU, torch::kFloat32);
    archive.write(checkpoint_key::model_weight(layout[i].name), host.to(dtype, false, /*copy=*/true));
    if (dtype == torch::kBFloat16)
      archive.write(checkpoint_key::model_master(layout[i].name),
                    as_saved(region_view(host, plan.params()[i]).contiguous(), copy));
  }
}

}  // namespace ppu
