// Optimizer base: parameter groups, the learning rate, zero_grad, and the checkpoint
// interface. A group may override weight decay (nanoGPT decays only 2-D weights).
// step() runs under NoGradGuard and skips parameters whose .grad is undefined.
// State is keyed by the parameter's position in the flattened group order, and exported
// as a StateDict: "state.{i}.<name>" per parameter (step counts as int64 scalars).
#pragma once
#include <initializer_list>
#include <optional>
#include <vector>

#include "nn/state_dict.h"
#include "ops/ops.h"

namespace rg::optim {

struct ParamGroup {
  std::vector<Tensor> params;
  std::optional<double> weight_decay;  // the optimizer's when unset
};

class Optimizer {
 public:
  Optimizer(std::vector<ParamGroup> groups, double lr, const char* name);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  // Clears (set_to_none) or zeroes every parameter's .grad.
  void zero_grad(bool set_to_none = true);
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  std::vector<Tensor> parameters() const;  // all groups, in order
  virtual nn::StateDict state_dict() const = 0;
  virtual void load_state_dict(const nn::StateDict& dict) = 0;

 protected:
  // Calls fn(index, param, grad, weight_decay) for each parameter with a gradient.
  template <typename Fn>
  void for_each_with_grad(double default_weight_decay, Fn&& fn) {
    size_t index = 0;
    for (const ParamGroup& group : groups_)
      for (const Tensor& p : group.params) {
        Tensor g = p.grad();
        if (g.defined()) fn(index, p, g, group.weight_decay.value_or(default_weight_decay));
        ++index;
      }
  }
  // Counts these tensors' memory as optimizer state in the memory report.
  static void tag_optimizer_state(std::initializer_list<Tensor> state);
  const Tensor& state_entry(const nn::StateDict& dict, size_t index, const char* name) const;
  // "state.{index}.{name}", a floating-point tensor of param's shape, as the caller converts
  // it to param's dtype (as the weights are). An integer moment is refused: converting one
  // would train on garbage.
  const Tensor& moment_entry(const nn::StateDict& dict, size_t index, const char* name,
                             const Tensor& param) const;
  // "state.{index}.step": one whole number >= 0.
  int64_t step_entry(const nn::StateDict& dict, size_t index) const;
  std::vector<ParamGroup> groups_;
  double lr_;
  const char* name_;
};

}  // namespace rg::optim
