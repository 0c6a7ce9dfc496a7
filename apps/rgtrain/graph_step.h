// --cuda-graphs (sim and cuda, one process): the training step captured once as a graph
// (kernels/cuda/graph.h) and replayed, as torch.cuda.graphs does for a whole step. The first
// kEagerSteps steps run eagerly (train_step: the optimizer state exists and lazy set-up is
// over). The next one copies its batch into static input tensors, writes the loss
// denominator and AdamW's scalars (step count, lr: its capturable form) into device memory,
// and captures zero_grad, forward and backward of each micro-batch, the gradient norm, the
// clip scale (on the device) and the AdamW update; that step and every later one replay the
// graph. Host work per replayed step: the input copies, the scalar writes, one graph launch
// and one read of (loss, gradient norm). The same bits as eager steps.
// Differences from eager: a non-finite loss or norm does not withhold the update (the run
// still stops after the step, unless --allow-nonfinite); --memory-report measures only the
// eager steps. DDP (world > 1), --zero, --optimizer sgd and --device cpu are refused.
#pragma once
#include <memory>
#include <vector>

#include "apps/rgtrain/train_step.h"
#include "kernels/cuda/graph.h"

namespace rgtrain {

class GraphedSteps {
 public:
  static constexpr int64_t kEagerSteps = 2;
  StepResult step(StepContext& c, const std::vector<std::vector<int64_t>>& micro_batches,
                  double denom, double lr);

 private:
  void load_inputs(StepContext& c, const std::vector<std::vector<int64_t>>& micro_batches,
                   double denom);
  void capture(StepContext& c, rg::optim::AdamW& adamw);

  int64_t eager_done_ = 0;
  std::unique_ptr<rg::gpu::Graph> graph_;
  std::vector<rg::Tensor> inputs_, targets_;  // static: the graph reads them
  rg::Tensor denom_;                          // the loss denominator, in the loss's dtype
  rg::Tensor scalars_;                        // AdamW's capturable scalars
  rg::Tensor result_;                         // f64 [2]: the step's loss and gradient norm
};

}  // namespace rgtrain
