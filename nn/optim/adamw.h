// AdamW (decoupled weight decay, bias correction) with PyTorch's defaults and semantics.
// Each parameter is updated by the fused kernel RG_KERNEL(device, adamw) (formula in
// kernels/cpu/adamw.cpp): p *= 1 - lr*wd; m = lerp(m, g, 1-b1); v = b2 v + (1-b2) g^2;
// p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps). Each parameter counts its own steps
// (a parameter without a gradient is skipped and keeps its count).
#pragma once
#include "nn/optim/optimizer.h"

namespace rg::optim {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class AdamW : public Optimizer {
 public:
  struct State {
    int64_t step = 0;
    Tensor exp_avg, exp_avg_sq;  // undefined before the first step
  };
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
  void step() override;
  const State& state(size_t index) const { return state_.at(index); }
  // "state.{i}.step" (int64 scalar), "state.{i}.exp_avg", "state.{i}.exp_avg_sq"
  nn::StateDict state_dict() const override;
  void load_state_dict(const nn::StateDict& dict) override;
  AdamWOptions options;

 private:
  std::vector<State> state_;
};

}  // namespace rg::optim
