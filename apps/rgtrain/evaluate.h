// rgtrain's evaluation: held-out exact-match accuracy on the addition task, and the final
// report (loss, accuracy, a few greedy completions).
#pragma once
#include "apps/rgtrain/run_state.h"

namespace rgtrain {

// Accuracy on the first n held-out sums (the addition task only).
double held_out_accuracy(RunState& s, int64_t n);

// Rank 0's summary after training.
void print_final_report(RunState& s, double final_loss, double wall_seconds,
                        double tokens_per_second);

}  // namespace rgtrain
