// Everything one rgtrain run holds, built by setup() (setup.cpp) before the first step:
// the group, data, model, optimizer, DDP wrapper, schedules, trace recorder.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/rgtrain/checkpoint.h"
#include "apps/rgtrain/config.h"
#include "apps/rgtrain/data.h"
#include "apps/rgtrain/directory_lock.h"
#include "dist/process_group.h"
#include "dist/trace.h"
#include "nn/ddp.h"
#include "nn/fsdp.h"
#include "nn/nn.h"
#include "nn/safetensors.h"
#include "ringgrad.h"

namespace rgtrain {

struct RunState {
  Args args;
  std::shared_ptr<rg::dist::ProcessGroup> group;  // null: a single process
  int64_t world = 1, rank = 0;
  bool lead = true;  // rank 0: prints, evaluates, saves
  rg::Device device{"cpu"};

  Data data;
  int64_t context = 0, vocab = 0;
  int64_t accum = 1, per_rank = 1;  // micro-batches per step, examples per rank per step
  std::unique_ptr<Schedule> schedule;
  rg::optim::WarmupCosineSchedule lr_of{0, 0, 0, 1};

  std::shared_ptr<rg::nn::Module> model;
  rg::nn::SafetensorsMetadata model_md;  // its shape (model_metadata), checked and saved
  std::unique_ptr<rg::optim::Optimizer> opt;
  std::unique_ptr<rg::nn::DistributedDataParallel> ddp;
  // --zero 3 under rgrun, instead of ddp: between steps the model's weights hold no memory
  // (with_full_parameters gathers them for whoever reads them).
  std::unique_ptr<rg::nn::FullyShardedDataParallel> fsdp;
  std::shared_ptr<rg::dist::TraceRecorder> trace;  // set with --trace

  std::string config;                        // what a checkpoint must match to be resumed
  std::string run_id;                        // rank 0's new_run_id(), on every rank
  std::string ckpt_path;                     // empty without --checkpoint
  std::unique_ptr<DirectoryLock> ckpt_lock;  // rank 0's, on --checkpoint, for the whole run
  int64_t start_step = 0;
  std::optional<Resumed> resumed;   // the optimizer state until s.opt is built (resume.h)
  std::vector<rg::Tensor> initial;  // the weights before step start_step (for --verify)
  // --verify: copies of the weights after steps 1, 10, 100, ... before the last (rank 0).
  std::vector<std::pair<int64_t, std::vector<rg::Tensor>>> verify_snapshots;
};

// Builds the run; throws UsageError or rg::Error before any training step.
RunState setup(const Args& a);

// Runs fn with the model's whole weights readable: under --zero 3 every rank must call it
// (the gather is collective), and the weights are freed again after fn.
template <typename Fn>
void with_full_parameters(RunState& s, Fn&& fn) {
  if (s.fsdp) s.fsdp->gather_full_parameters();
  fn();
  if (s.fsdp) s.fsdp->reshard();
}

}  // namespace rgtrain
