// --verify: replays the run in one process from the same initial weights, one backward of
// the whole global batch per step (train_step with a single micro-batch and no DDP), and
// prints the largest parameter difference from the distributed run: after steps 1, 10, 100,
// ... (the snapshots the training loop kept) and at the end.
#pragma once
#include "apps/rgtrain/run_state.h"

namespace rgtrain {

void verify_against_reference(RunState& s);

}  // namespace rgtrain
