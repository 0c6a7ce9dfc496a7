// --zero 1, 2 and 3 checkpoints: the optimizer's state is sharded (Optimizer::state_is_sharded;
// for ZeroAdamW and FsdpAdamW, pieces of the moments keyed independently of the world size and
// the stage, nn/optim/moment_pieces.h), so every rank writes its own state_dict() into
//   <dir>/optim-<run id>-step-<S>-shard-<r>-of-<N>.safetensors
// through an AtomicFile, with the checkpoint's identity in its metadata (checkpoint_identity.h)
// and zero_shard=r, zero_shards=N. The model file ckpt.safetensors is the commit point: rank 0
// renames it only after every rank's shard is on disk (a collective between the two), and it
// records each shard's name, size and fnv1a. The run id in the shard names keeps a committed
// checkpoint whole whatever a later run in the directory does before its own commit: that
// run's shards have other names, and the shards no committed ckpt names are removed only
// after a newer ckpt is committed. A resume at any world size reads exactly the N shards the
// ckpt names and checks each against its record and its identity. Across nodes, DIR must be
// one shared directory: every rank reads every shard.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "apps/rgtrain/checkpoint_identity.h"
#include "dist/process_group.h"
#include "nn/nn.h"
#include "nn/optim/optimizer.h"

namespace rgtrain {

// The shard file of `rank` of `world` for the checkpoint `id`, beside `ckpt_path`.
std::string shard_path(const std::string& ckpt_path, const CheckpointIdentity& id, int64_t rank,
                       int64_t world);

// Collective: every rank writes its shard; returns every rank's record (index: rank) once all
// are committed. A rank that fails makes every rank throw UsageError with its message.
std::vector<ShardRecord> save_zero_shard(const std::string& ckpt_path,
                                         const rg::optim::Optimizer& opt,
                                         const CheckpointIdentity& id,
                                         rg::dist::ProcessGroup& group);

// The state of the shard files `shards` of the checkpoint `id` at `ckpt_path`, merged by
// opt.merge_state_dicts. UsageError naming the file when one is missing or unreadable, differs
// from its record, belongs to another checkpoint, or holds optimizer state that is not of
// dtype `moment_dtype`, not finite, or at another step (check_optimizer_state).
rg::nn::StateDict read_zero_shards(const std::string& ckpt_path, const CheckpointIdentity& id,
                                   const std::vector<ShardRecord>& shards,
                                   const rg::optim::Optimizer& opt, rg::Device device,
                                   rg::DType moment_dtype);

// Removes the shard files beside `ckpt_path` (of any run) other than `keep` (call on rank 0
// after the ckpt that names them is committed; an empty `keep` removes all).
void remove_other_shards(const std::string& ckpt_path, const std::vector<ShardRecord>& keep);

// Removes temp files an interrupted shard write left beside `ckpt_path`; says so on stdout.
void remove_stale_shard_temps(const std::string& ckpt_path);

}  // namespace rgtrain
