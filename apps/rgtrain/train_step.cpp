// One optimizer step; see train_step.h.
#include "apps/rgtrain/train_step.h"

#include <chrono>
#include <cmath>

#include "apps/rgtrain/data.h"
#include "apps/rgtrain/util.h"
#include "nn/optim/clip_grad.h"

namespace rgtrain {

double count_targets(const rg::data::Dataset& data, const std::vector<int64_t>& idx) {
  double n = 0;
  for (int64_t i : idx)
    for (int64_t t : data.get(i).target) n += t != rg::data::kIgnoreIndex;
  return n;
}

rg::Tensor summed_loss(StepContext& c, const rg::Tensor& x, const rg::Tensor& y) {
  rg::AutocastGuard autocast(rg::DType::bf16, c.autocast);  // backward runs after it, outside
  rg::Tensor logits = c.model.forward(x);
  return rg::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
                           rg::Reduction::sum, rg::data::kIgnoreIndex);
}

namespace {

// The averaged gradients' global norm before clipping, and the factor the step multiplies
// them by (1: no clipping). The optimizer knows where its gradients are: under ZeRO they
// exist only as the ranks' shards, and the norm is collective. The sums of squares of whole
// gradients are added in the model's parameter order; the scale reaches the optimizer through
// step(scale), which AdamW folds into its update (the bits of clip_grad_norm_ then step(), one
// pass fewer) and any other optimizer applies to the gradients first.
struct ClippedNorm {
  double norm;
  double scale = 1.0;
};

ClippedNorm gradient_norm(StepContext& c) {
  const double norm = c.opt.grad_norm(c.model.parameters());
  return {norm, c.clip > 0 ? rg::optim::clip_scale(norm, c.clip) : 1.0};
}

rg::Tensor micro_batch_loss(StepContext& c, const std::vector<int64_t>& idx, double denom) {
  auto [x, y] = rgtrain::gather(c.data, idx, c.device);
  rg::Tensor loss = summed_loss(c, x, y);
  return rg::div(loss, rg::scalar_tensor(denom, loss.dtype(), loss.device()));
}

// The mean of the ranks' loss shares, all-reduced in the background (f64: no rounding to
// speak of, so every world size prints the same loss).
class GlobalLoss {
 public:
  GlobalLoss(rg::dist::ProcessGroup* group, double share) : share_(share) {
    if (!group) return;
    mean_ = rg::scalar_tensor(share, rg::DType::f64).reshape({1});
    work_ = group->allreduce(mean_, rg::dist::CombineOp::avg);
  }
  double wait() {
    if (!work_) return share_;
    work_->wait();
    return mean_.item();
  }

 private:
  double share_;
  rg::Tensor mean_;
  std::shared_ptr<rg::dist::Work> work_;
};

// Runs `work` as one phase of the memory report, when there is one.
template <typename Work>
void in_phase(MemoryReport* memory, StepPhase phase, Work&& work) {
  if (memory) memory->begin();
  work();
  if (memory) memory->end(phase);
}

}  // namespace

StepResult train_step(StepContext& c, const std::vector<std::vector<int64_t>>& micro_batches,
                      double denom, double lr) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  StepResult r;
  c.opt.set_lr(lr);
  c.opt.zero_grad();
  for (size_t k = 0; k < micro_batches.size(); ++k) {
    const auto start = Clock::now();
    const bool last = k + 1 == micro_batches.size();
    auto guard = (c.ddp && !last) ? c.ddp->no_sync() : rg::nn::NoSyncGuard();
    auto fsdp_guard = (c.fsdp && !last) ? c.fsdp->no_sync() : rg::nn::FsdpNoSyncGuard();
    if (c.ddp) c.ddp->pre_forward();
    if (c.fsdp) c.fsdp->pre_forward();  // gathers the root unit; each block gathers its own
    rg::Tensor loss;
    in_phase(c.memory, StepPhase::forward,
             [&] { loss = micro_batch_loss(c, micro_batches[k], denom); });
    in_phase(c.memory, StepPhase::backward, [&] { loss.backward(); });
    r.loss += loss.item();
    if (c.trace)
      c.trace->span(c.rank, "compute", "forward+backward " + std::to_string(k), start,
                    Clock::now());
  }
  const auto opt_start = Clock::now();
  in_phase(c.memory, StepPhase::optimizer, [&] {
    GlobalLoss global(c.group, r.loss);
    const ClippedNorm clipped = gradient_norm(c);
    r.grad_norm = clipped.norm;
    r.loss = global.wait();
    r.skipped = c.skip_nonfinite && !(std::isfinite(r.loss) && std::isfinite(r.grad_norm));
    if (!r.skipped) c.opt.step(clipped.scale);
  });
  if (c.trace) c.trace->span(c.rank, "compute", "optimizer step", opt_start, Clock::now());
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

std::string first_nonfinite_parameter(rg::nn::Module& model, bool grads) {
  for (auto& [name, p] : model.named_parameters()) {
    if (grads && !p.grad().defined()) continue;
    const auto values = (grads ? p.grad() : p).to_vector<double>();
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        return "'" + name + "' (element " + std::to_string(i) + " = " + fmt("%g", values[i]) + ")";
  }
  return "";
}

}  // namespace rgtrain
