#include "core/wire_plan.h"

namespace ppu {

WirePlan delta_wire_plan(const OuterConfig& outer, const ModelSpec& model, Collective schedule) {
  return {outer.delta_dtype, model.d_model, outer.sync_every, schedule};
}

WirePlan wire_plan(const Config& c) {
  if (c.method != Method::Ddp) return delta_wire_plan(c.outer, c.model, c.network.collective);
  return {c.train.dtype == Dtype::Bf16 ? WireDtype::Bf16 : WireDtype::Fp32, 1, 1, c.network.collective};
}

}  // namespace ppu
