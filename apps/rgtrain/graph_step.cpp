// The captured training step; see graph_step.h.
#include "apps/rgtrain/graph_step.h"

#include <chrono>
#include <iostream>

#include "apps/rgtrain/data.h"
#include "apps/rgtrain/util.h"
#include "nn/optim/adamw.h"
#include "nn/optim/clip_grad.h"

namespace rgtrain {

// Copies micro-batch k's examples into the static inputs (made at the first call, before the
// capture) and the denominator into denom_, as train_step's scalar_tensor would round it.
void GraphedSteps::load_inputs(StepContext& c, const std::vector<std::vector<int64_t>>& micro,
                               double denom) {
  const bool first = inputs_.empty();
  if (!first && micro.size() != inputs_.size())
    fail("--cuda-graphs: step has ", micro.size(), " micro-batches, the captured step ",
         inputs_.size());
  for (size_t k = 0; k < micro.size(); ++k) {
    auto [x, y] = gather(c.data, micro[k], rg::kCPU);
    if (first) {
      inputs_.push_back(x.to(c.device));
      targets_.push_back(y.to(c.device));
      continue;
    }
    if (x.shape() != inputs_[k].shape() || y.shape() != targets_[k].shape())
      fail("--cuda-graphs: micro-batch ", k, " has inputs ", rg::shape_str(x.shape()),
           ", the captured step ", rg::shape_str(inputs_[k].shape()), " (shapes must not change)");
    inputs_[k].copy_(x);
    targets_[k].copy_(y);
  }
  const rg::DType loss_dtype = c.model.parameters().at(0).dtype();  // autocast: f32 loss
  if (first) denom_ = rg::empty({}, loss_dtype, c.device);
  denom_.copy_(rg::scalar_tensor(denom, loss_dtype));
}

// Recorded, not run: the step of train_step with device tensors where it reads the host.
void GraphedSteps::capture(StepContext& c, rg::optim::AdamW& adamw) {
  graph_ = std::make_unique<rg::gpu::Graph>();
  rg::gpu::GraphCapture capture(*graph_, c.device);
  c.opt.zero_grad();
  rg::Tensor total;  // train_step's sum of the micro-batches' losses, in f64
  for (size_t k = 0; k < inputs_.size(); ++k) {
    rg::Tensor loss = rg::div(summed_loss(c, inputs_[k], targets_[k]), denom_);
    loss.backward();
    const rg::Tensor share = loss.detach().to(rg::DType::f64);
    total = k == 0 ? share : rg::add(total, share);
  }
  const rg::Tensor norm = rg::optim::grad_norm_on_device(c.model.parameters());
  if (c.clip > 0)
    adamw.set_capturable_grad_scale(scalars_, rg::optim::clip_scale_on_device(norm, c.clip));
  adamw.step_capturable(scalars_);
  result_ = rg::cat({total.reshape({1}), norm.reshape({1})});
}

namespace {
void say_captured(int rank, const rg::gpu::Graph& graph) {
  if (rank != 0) return;
  std::cout << "rgtrain: --cuda-graphs: the training step is captured after "
            << GraphedSteps::kEagerSteps << " eager steps";
  if (graph.recorded_work() > 0) std::cout << " (" << graph.recorded_work() << " operations)";
  std::cout << "; each step from here replays it\n" << std::flush;
}
}  // namespace

StepResult GraphedSteps::step(StepContext& c, const std::vector<std::vector<int64_t>>& micro,
                              double denom, double lr) {
  if (eager_done_ < kEagerSteps) {
    ++eager_done_;
    return train_step(c, micro, denom, lr);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto* adamw = dynamic_cast<rg::optim::AdamW*>(&c.opt);
  if (!adamw) fail("--cuda-graphs: the optimizer must be AdamW (its capturable step)");
  c.opt.set_lr(lr);
  load_inputs(c, micro, denom);
  if (!scalars_.defined()) scalars_ = adamw->capturable_scalars(c.device);
  adamw->prepare_capturable_step(scalars_);
  if (!graph_) {
    capture(c, *adamw);
    say_captured(c.rank, *graph_);
  }
  graph_->replay();
  const std::vector<double> values = result_.to(rg::kCPU).to_vector<double>();
  StepResult r;
  r.loss = values[0];
  r.grad_norm = values[1];
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace rgtrain
