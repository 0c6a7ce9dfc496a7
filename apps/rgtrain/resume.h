// --resume (see config.h): loads the checkpoint of --checkpoint DIR into the model and the
// optimizer, or, with --resume auto and no checkpoint there, starts fresh (saying so).
//
// Every rank makes the same choice. Rank 0 alone looks for the file and tells the others what
// it found; then every rank loads it and the ranks check they all read the same step. A
// half-written checkpoint is never seen: only AtomicFile's rename gives a file the name
// ckpt.safetensors, after all its bytes are on disk. Nor can the file change between rank 0's
// look and the others' reads: no rank saves before the first training step (a collective
// one), and rgrun starts a failed job again only after every rank of it has ended. With
// --zero 1, 2 or 3 the same holds for the optimizer shards: their names carry the writing
// run's id and the step, and a shard is removed only after a newer ckpt names others. The
// ranks check that they all read the same checkpoint: its step and its id.
//
// The world size may differ from the checkpoint's when the data order stays the same: the
// global batch of a step is positions [s G, (s+1) G) of the epoch's permutation at any world
// size, as long as an epoch has as many steps (checked; otherwise an error says so).
#pragma once
#include <cstdint>

#include "apps/rgtrain/run_state.h"

namespace rgtrain {

// The step training continues from (0: a fresh start). Call on every rank, after the model
// is built and before DDP wraps it. Loads the optimizer state into s.opt too, or, when s.opt
// is not built yet (--zero 1's ZeroAdamW needs the DDP), keeps it in s.resumed for
// resume_optimizer.
int64_t resume_if_asked(RunState& s);

// Loads the optimizer state kept by resume_if_asked into s.opt (nothing when none is kept).
void resume_optimizer(RunState& s);

}  // namespace rgtrain
