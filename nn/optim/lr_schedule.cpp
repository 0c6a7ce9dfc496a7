// Warmup + cosine learning-rate schedule (see nn/optim/lr_schedule.h).
#include "nn/optim/lr_schedule.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace rg::optim {

double WarmupCosineSchedule::operator()(int64_t step) const {
  RG_CHECK(step >= 0 && warmup_steps >= 0 && decay_steps > warmup_steps,
           "WarmupCosineSchedule: need step >= 0 and decay_steps > warmup_steps >= 0, got step ",
           step, ", warmup ", warmup_steps, ", decay ", decay_steps);
  if (step < warmup_steps)
    return max_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  if (step > decay_steps) return min_lr;
  const double r =
      static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - warmup_steps);
  return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * r)) * (max_lr - min_lr);
}

}  // namespace rg::optim
