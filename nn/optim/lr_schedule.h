// Learning-rate schedule of nanoGPT: linear warmup, then cosine decay to min_lr.
//   step < warmup_steps:          max_lr * (step + 1) / (warmup_steps + 1)
//   step > decay_steps:           min_lr
//   otherwise, r = (step - warmup_steps) / (decay_steps - warmup_steps):
//                                 min_lr + 0.5 * (1 + cos(pi * r)) * (max_lr - min_lr)
// Use: optimizer.set_lr(schedule(step)) before optimizer.step().
#pragma once
#include <cstdint>

namespace rg::optim {

struct WarmupCosineSchedule {
  double max_lr = 6e-4;
  double min_lr = 6e-5;
  int64_t warmup_steps = 2000;
  int64_t decay_steps = 600000;  // step at which min_lr is reached
  double operator()(int64_t step) const;
};

}  // namespace rg::optim
