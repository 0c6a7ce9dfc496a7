// rgtrain's checkpoints: <dir>/ckpt.safetensors holds the model, the optimizer state
// ("optim." names) and metadata (step, config, data position). Only rank 0 writes it, through
// an AtomicFile, so the file is always whole; temp files a killed writer left behind are
// removed at start. With --zero 1, 2 or 3 the optimizer state is not in it but in one shard file
// per rank (zero_checkpoint.h), written before it; its metadata zero_shards=N and one record
// per shard (name, size, fnv1a) name them. Every file of a checkpoint carries its identity
// (run id, checkpoint id, step, optimizer step: checkpoint_identity.h), and a resume checks
// that every file belongs and that the optimizer state is sound (dtype, shape, finite, step).
//
// A checkpoint resumes at another world size (same global batch) when the data order does
// not change with it (resume.cpp checks); the optimizer state must be of the same kind:
// sharded for --zero 1, 2 or 3 under rgrun, whole otherwise (or --reset-optimizer). Under
// --zero 3 every rank gathers the weights for rank 0 to write them whole.
//
// Fault-injection hook for tests: RG_TEST_HOLD_CHECKPOINT=N makes rank 0 stop inside the
// save of step N, after the bytes are written and before the rename, printing
// "checkpoint: holding the write of step N", until a signal ends it. RG_TEST_HOLD_SHARD=N
// does the same in every rank's shard write (zero_checkpoint.cpp).
#pragma once
#include <string>
#include <vector>

#include "apps/rgtrain/checkpoint_identity.h"
#include "apps/rgtrain/config.h"
#include "nn/nn.h"
#include "nn/safetensors.h"
#include "ringgrad.h"

namespace rgtrain {

struct CheckpointPosition {
  int64_t step = 0;
  int64_t data_epoch = 0, data_offset = 0;
};

// "<dir>/ckpt.safetensors", or empty without --checkpoint.
std::string checkpoint_path(const Args& a);

// Removes what an interrupted save left beside `path` and says so on stdout.
void remove_stale_checkpoint_temps(const std::string& path);

// Rank 0. model_md: the model's model_metadata; id: the checkpoint's identity (its step is
// at.step). shards not empty: the optimizer state is in those shard files, already committed
// (save_zero_shard); the ckpt records them, and every other shard file beside it is removed
// after its commit.
void save_checkpoint(const std::string& path, rg::nn::Module& model,
                     const rg::nn::SafetensorsMetadata& model_md, rg::optim::Optimizer& opt,
                     const std::string& config, const CheckpointPosition& at, uint64_t seed,
                     const CheckpointIdentity& id, const std::vector<ShardRecord>& shards);

// What a checkpoint read by resume_from_checkpoint holds besides the model.
struct Resumed {
  int64_t step = 0;
  int64_t world = 1;                        // the world size that wrote it
  int64_t zero_shards = 0;                  // > 0: the optimizer state is in that many shard files
  CheckpointIdentity id;                    // what every file of it must carry
  std::vector<ShardRecord> shards;          // zero_shards records, from the ckpt's metadata
  rg::nn::StateDict optim;                  // the whole optimizer state ("optim." entries), if any
  rg::DType moment_dtype = rg::DType::f32;  // the parameters': the optimizer state's dtype
};

// Loads the model (load_into, against model_md); returns the rest. Errors (UsageError) when
// the config differs (but for the world size), the step is beyond --steps, the file has no
// identity, or its whole optimizer state fails check_optimizer_state against the dtype of
// the model's parameters.
Resumed resume_from_checkpoint(const std::string& path, const Args& a, const std::string& config,
                               rg::nn::Module& model, const rg::nn::SafetensorsMetadata& model_md,
                               rg::Device device);

// Loads r's optimizer state into opt (a sharded one reads and checks the shard files,
// read_zero_shards, merged by opt.merge_state_dicts). Errors when the state is missing, or
// sharded for a whole optimizer or vice versa, unless --reset-optimizer (which then starts
// the moments afresh).
void load_optimizer_state(const Resumed& r, const std::string& path, const Args& a,
                          rg::optim::Optimizer& opt, rg::Device device);

}  // namespace rgtrain
