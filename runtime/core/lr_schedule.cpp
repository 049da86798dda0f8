#include "core/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace ppu {

double inner_learning_rate(const InnerConfig& inner, int64_t step, int64_t total_steps) {
  if (step < inner.warmup_steps) return inner.lr * static_cast<double>(step + 1) / inner.warmup_steps;
  if (inner.schedule == LrScheduleKind::Constant) return inner.lr;
  const double span = std::max<int64_t>(1, total_steps - inner.warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - inner.warmup_steps) / span);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return inner.lr * (inner.min_lr_ratio + (1.0 - inner.min_lr_ratio) * cosine);
}

}  // namespace ppu
