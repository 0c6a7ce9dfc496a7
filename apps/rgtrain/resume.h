// --resume (see config.h): loads the checkpoint of --checkpoint DIR into the model and the
// optimizer, or, with --resume auto and no checkpoint there, starts fresh (saying so).
//
// Every rank makes the same choice. Rank 0 alone looks for the file and tells the others what
// it found; then every rank loads it and the ranks check they all read the same step. A
// half-written checkpoint is never seen: only AtomicFile's rename gives a file the name
// ckpt.safetensors, after all its bytes are on disk. Nor can the file change between rank 0's
// look and the others' reads: no rank saves before the first training step (a collective
// one), and rgrun starts a failed job again only after every rank of it has ended.
#pragma once
#include <cstdint>

#include "apps/rgtrain/run_state.h"

namespace rgtrain {

// The step training continues from (0: a fresh start). Call on every rank, after the model
// and the optimizer are built and before DDP wraps the model.
int64_t resume_if_asked(RunState& s);

}  // namespace rgtrain
