// rgtrain's training loop: steps start_step..steps, with checkpoints, evaluation, progress,
// metrics, the non-finite check and --stop-after.
#pragma once
#include "apps/rgtrain/run_state.h"

namespace rgtrain {

struct TrainSummary {
  double last_loss = 0, tokens = 0, train_seconds = 0;
  bool stopped_early = false;  // --stop-after
};

TrainSummary train(RunState& s);

// Throws UsageError naming the step and the first non-finite parameter when the loss, the
// gradient norm or a weight is NaN or infinite (unless --allow-nonfinite).
void check_finite(RunState& s, int64_t step, double loss, double grad_norm);

}  // namespace rgtrain
