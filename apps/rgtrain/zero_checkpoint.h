// --zero 1, 2 and 3 checkpoints: the optimizer's state is sharded (Optimizer::state_is_sharded;
// for ZeroAdamW and FsdpAdamW, pieces of the moments keyed independently of the world size and
// the stage, nn/optim/moment_pieces.h), so every rank
// writes its own state_dict() into
//   <dir>/optim-step-<S>-shard-<r>-of-<N>.safetensors
// through an AtomicFile, with metadata step=S, zero_shard=r, zero_shards=N. The model file
// ckpt.safetensors is the commit point: rank 0 renames it only after every rank's shard is on
// disk (a collective between the two), and it records zero_shards=N. The step in the shard
// names keeps a crash between the two commits harmless: the older ckpt still names its own
// shards, and they are removed only after a newer ckpt names others. A resume at any world
// size reads exactly the N shards the ckpt names and checks their step. Across nodes, DIR
// must be one shared directory: every rank reads every shard.
#pragma once
#include <cstdint>
#include <string>

#include "dist/process_group.h"
#include "nn/nn.h"
#include "nn/optim/optimizer.h"

namespace rgtrain {

// The shard file of `rank` of `world` for the checkpoint `ckpt_path` at `step`.
std::string shard_path(const std::string& ckpt_path, int64_t step, int64_t rank, int64_t world);

// Collective: every rank writes its shard; returns when all are committed. A rank that fails
// makes every rank throw UsageError with its message.
void save_zero_shard(const std::string& ckpt_path, const rg::optim::Optimizer& opt, int64_t step,
                     rg::dist::ProcessGroup& group);

// The state of the `shards` shard files of `ckpt_path` at `step`, merged by
// opt.merge_state_dicts (UsageError naming the file when one is missing, unreadable or from
// another step).
rg::nn::StateDict read_zero_shards(const std::string& ckpt_path, int64_t step, int64_t shards,
                                   const rg::optim::Optimizer& opt, rg::Device device);

// Removes the shard files beside `ckpt_path` that are not the `shards` files of `step` (call
// on rank 0 after the ckpt that names them is committed; shards = 0 removes all).
void remove_other_shards(const std::string& ckpt_path, int64_t step, int64_t shards);

// Removes temp files an interrupted shard write left beside `ckpt_path`; says so on stdout.
void remove_stale_shard_temps(const std::string& ckpt_path);

}  // namespace rgtrain
