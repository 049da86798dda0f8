// Inner learning-rate schedule (§3.1): linear warm-up to `lr` over `warmup_steps`, then cosine
// decay to lr * min_lr_ratio at `total_steps` ("constant" keeps lr after warm-up).
#pragma once

#include <cstdint>

#include "core/config.h"

namespace ppu {

// Learning rate for the inner step with 0-based index `step`.
double inner_learning_rate(const InnerConfig& inner, int64_t step, int64_t total_steps);

}  // namespace ppu
