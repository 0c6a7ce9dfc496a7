// Shared set-up of the DDP equivalence tests: one configuration of (model, world, micro-
// batches, bucket cap, grad-as-bucket-view, overlap, dtype), run as DDP on thread ranks and
// as a single process on the whole batch, from the same initial weights and data.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "nn/ddp.h"
#include "nn/state_dict.h"
#include "ringgrad.h"

namespace rg::testing {

struct Setup {
  std::string model = "mlp";  // "mlp" or "gpt"
  int world = 2;
  int accum = 1;  // micro-batches per optimizer step, per rank
  int micro = 3;  // examples per micro-batch, per rank
  double bucket_cap_mb = 25;
  double first_bucket_cap_mb = 1;
  bool grad_view = false;
  bool overlap = true;
  DType dtype = DType::f64;
  int steps = 3;
  std::string optimizer = "sgd";  // "sgd" (momentum) or "adamw"
  bool bias = true;               // GPT linear/layernorm biases
  bool checkpoint = false;        // GPT: activation checkpointing in the DDP ranks only
  int zero = 0;     // DDP ranks: this zero_stage with optim::ZeroAdamW (needs "adamw")
  double clip = 0;  // > 0: clip the gradients' global norm to this before each step
  // Resuming (DDP ranks): the data of steps [first_step, first_step + steps), starting from
  // these weights (when given) and this optimizer state (when not empty).
  int first_step = 0;
  std::vector<Tensor> initial_params;
  nn::StateDict optimizer_state;
  // DDP ranks: runs after the last backward of each step, before clipping and the step.
  std::function<void(nn::DistributedDataParallel&)> before_step;
};

struct RankResult {
  std::vector<Tensor> params;  // after training, in registration order
  std::vector<int64_t> allreduces_per_step;
  std::vector<int64_t> buckets_per_step;
  int64_t allreduces_inside_no_sync = 0;
  int64_t state_elements = 0;           // per moment of the optimizer's state on this rank
  int64_t largest_bucket_elements = 0;  // padding included
  nn::StateDict optimizer_state;        // the optimizer's state_dict after training (copies)
  // Over all steps: the most parameters with a .grad after a synchronised backward, the
  // fewest after a backward inside no_sync (-1: none ran), the most buckets with their full
  // buffer after a step.
  int64_t most_grads_after_sync = 0;
  int64_t fewest_grads_after_no_sync = -1;
  int64_t most_full_buckets_after_step = 0;
};

// Building blocks, shared with the Join tests (join_training.h).
std::shared_ptr<nn::Module> make_model(const Setup& s, uint64_t seed);
std::unique_ptr<optim::Optimizer> make_optimizer(const Setup& s, std::vector<Tensor> params);
// The AdamW settings of the "adamw" runs (lr 1e-2, weight decay 0.1).
optim::AdamWOptions adamw_options();
// n examples (inputs, targets) of the setup's model, some targets ignored so that counting
// them matters; the same seed gives the same batch.
std::pair<Tensor, Tensor> random_batch(const Setup& s, int64_t n, uint64_t seed);
// Sum-reduced cross-entropy over the examples, divided by `denominator` (the counted targets
// of the whole global batch, divided by world for DDP, which averages over ranks).
Tensor loss_of(const Setup& s, nn::Module& model, const Tensor& x, const Tensor& y,
               double denominator);
// Targets that are not ignored.
double counted(const Tensor& targets);

std::vector<Tensor> train_single_process(const Setup& s);
// One result per rank (ranks run as threads of this process).
std::vector<RankResult> train_ddp_threads(
    const Setup& s, const std::function<void(dist::ProcessGroup&)>& at_end = {});
// The body of one rank, reusable by the process-based test program. `at_end`, if set, runs
// on every rank after training while the model and optimizer are still alive.
RankResult train_ddp_rank(const Setup& s, dist::ProcessGroup& group,
                          const std::function<void(dist::ProcessGroup&)>& at_end = {});

double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b);
bool bit_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

}  // namespace rg::testing
