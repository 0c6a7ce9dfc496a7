// AdamW (decoupled weight decay, bias correction) with PyTorch's defaults and semantics.
// The update is the fused formula of kernels/cpu/adamw.cpp: p *= 1 - lr*wd;
// m = lerp(m, g, 1-b1); v = b2 v + (1-b2) g^2; p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t)
// + eps). Each parameter counts its own steps (a parameter without a gradient is skipped and
// keeps its count). step() makes one multi-tensor kernel call (rg::adamw_multi) per group of
// parameters sharing device, dtype, weight decay and step count (in practice two: the decay
// and the no-decay group), bit-identical to one single-tensor call per parameter.
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
  // The step with every gradient multiplied by grad_scale as it is read, leaving .grad as
  // it is: bit-identical to g.mul_(grad_scale) on each gradient then step(). This folds
  // gradient clipping into the update pass, without a pass that rewrites the gradients:
  //   double norm = opt.grad_norm(params);        // instead of opt.clip_grad_norm_(c, params)
  //   opt.step(clip_scale(norm, c));              // nn/optim/clip_grad.h
  // (clip_grad_norm_ then step() still works, and gives the same bits.)
  void step(double grad_scale) override;
  // Capturable steps, for graph capture (kernels/cuda/graph.h; sim and cuda; as PyTorch's
  // capturable=True): the update kernels read their scalars from `scalars`, device memory
  // holding one AdamWScalars<T> per kernel call (capturable_scalars() makes it), when they
  // run, so a replay updates with the values written before it. Before each replay (and
  // before the capture), prepare_capturable_step advances the step counts as step() does and
  // writes that step's scalars (lr, bias corrections; gradient scale 1) into `scalars`;
  // step_capturable, captured once, launches the update. set_capturable_grad_scale, captured
  // before it, writes a clip scale computed on the device (an f64 [1]) into each call's
  // scalars. The bits of step(grad_scale) with that scale.
  Tensor capturable_scalars(Device device) const;
  void prepare_capturable_step(const Tensor& scalars);
  void step_capturable(const Tensor& scalars);
  void set_capturable_grad_scale(const Tensor& scalars, const Tensor& grad_scale);
  const State& state(size_t index) const { return state_.at(index); }
  // "state.{i}.step" (int64 scalar), "state.{i}.exp_avg", "state.{i}.exp_avg_sq"
  nn::StateDict state_dict() const override;
  void load_state_dict(const nn::StateDict& dict) override;
  AdamWOptions options;

 private:
  struct Group;
  void add_to_group(std::vector<Group>& groups, size_t i, const Tensor& p, const Tensor& grad,
                    double weight_decay, double grad_scale, bool advance = true);
  std::vector<Group> capturable_groups(bool advance);
  std::vector<State> state_;
  std::vector<DType> capturable_dtypes_;  // of each kernel call, set by prepare_capturable_step
};

// The pieces of one adamw_multi call, for optimizers that update slices of flat shards
// (ZeroAdamW, FsdpAdamW): one call per weight decay and dtype.
struct DecayGroup {
  double weight_decay;
  std::vector<AdamWTensors> sets;
};
// Adds `set` to the group of its weight decay and dtype, or starts one.
void add_to_decay_group(std::vector<DecayGroup>& groups, double weight_decay, AdamWTensors set);

}  // namespace rg::optim
