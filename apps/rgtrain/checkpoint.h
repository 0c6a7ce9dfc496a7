// rgtrain's checkpoints: <dir>/ckpt.safetensors holds the model, the optimizer state
// ("optim." names) and metadata (step, config, data position). Only rank 0 writes, through
// an AtomicFile, so the file is always whole; temp files a killed writer left behind are
// removed at start.
//
// Fault-injection hook for tests: RG_TEST_HOLD_CHECKPOINT=N makes rank 0 stop inside the
// save of step N, after the bytes are written and before the rename, printing
// "checkpoint: holding the write of step N", until a signal ends it.
#pragma once
#include <string>

#include "apps/rgtrain/config.h"
#include "nn/nn.h"
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

void save_checkpoint(const std::string& path, rg::nn::Module& model, rg::optim::Optimizer& opt,
                     const std::string& config, const CheckpointPosition& at, uint64_t seed);

// Loads model and optimizer; returns the step to continue from. Errors (UsageError) when the
// config differs, the step is beyond --steps, or the optimizer state is missing without
// --reset-optimizer.
int64_t resume_from_checkpoint(const std::string& path, const Args& a, const std::string& config,
                               rg::nn::Module& model, rg::optim::Optimizer& opt, rg::Device device);

}  // namespace rgtrain
