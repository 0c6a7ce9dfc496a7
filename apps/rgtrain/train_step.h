// One optimizer step of rgtrain, used by the training loop (micro-batches of one rank, DDP
// averaging the gradients) and by --verify's single-process reference (one batch holding
// every rank's examples, no DDP): the same code, so they can only differ by arithmetic.
//
// The loss of each micro-batch is its summed cross-entropy divided by `denom`; with denom =
// (counted targets of the whole global batch) / world, DDP's average of the ranks'
// gradients equals the gradient of the global batch's mean loss, and the mean of the ranks'
// losses is the global batch's mean loss: StepResult::loss, the same number on every rank
// (one 8-byte all-reduce, in flight while the gradient norm is computed).
#pragma once
#include <string>
#include <vector>

#include "apps/rgtrain/memory_report.h"
#include "data/dataset.h"
#include "dist/process_group.h"
#include "dist/trace.h"
#include "nn/ddp.h"
#include "nn/fsdp.h"
#include "nn/nn.h"
#include "ringgrad.h"

namespace rgtrain {

struct StepContext {
  rg::nn::Module& model;
  rg::optim::Optimizer& opt;
  rg::nn::DistributedDataParallel* ddp;  // null: a single process (or --zero 3)
  const rg::data::Dataset& data;
  rg::Device device;
  double clip = 0;  // 0: no clipping
  rg::dist::TraceRecorder* trace = nullptr;
  int rank = 0;
  bool skip_nonfinite = false;  // no optimizer step when the loss or gradients are not finite
  rg::dist::ProcessGroup* group = nullptr;  // averages the printed loss over the ranks
  MemoryReport* memory = nullptr;           // when set, the step's phases are measured into it
  bool autocast = false;                    // --precision bf16: the forward under autocast
  rg::nn::FullyShardedDataParallel* fsdp = nullptr;  // --zero 3 under rgrun (then ddp is null)
};

struct StepResult {
  double loss = 0;       // the global batch's mean loss (every rank's examples)
  double grad_norm = 0;  // of the (averaged) gradients, before clipping
  double seconds = 0;
  bool skipped = false;  // skip_nonfinite withheld the optimizer step
};

// Targets of examples `idx` that count in the loss (not kIgnoreIndex).
double count_targets(const rg::data::Dataset& data, const std::vector<int64_t>& idx);

// The summed cross-entropy of inputs x and targets y ([B, T] on c.device): the forward,
// under autocast with c.autocast. The step's loss is this divided by denom.
rg::Tensor summed_loss(StepContext& c, const rg::Tensor& x, const rg::Tensor& y);

StepResult train_step(StepContext& c, const std::vector<std::vector<int64_t>>& micro_batches,
                      double denom, double lr);

// The first parameter (or, with `grads`, parameter gradient) holding a NaN or an infinity,
// as "'name' (element i = value)", or empty when all are finite.
std::string first_nonfinite_parameter(rg::nn::Module& model, bool grads = false);

}  // namespace rgtrain
