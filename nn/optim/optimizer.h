// Optimizer base: parameter groups, the learning rate, zero_grad, and the checkpoint
// interface. A group may override weight decay (nanoGPT decays only 2-D weights).
// step() runs under NoGradGuard and skips parameters whose .grad is undefined.
// State is keyed by the parameter's position in the flattened group order, and exported
// as a StateDict: "state.{i}.<name>" per parameter (step counts as int64 scalars).
//
// The virtual interface a training loop needs, whatever the optimizer (defaults for an
// optimizer that holds whole gradients and whole state, as AdamW and SGD do):
//   grad_norm, clip_grad_norm_   torch.nn.utils.clip_grad_norm_ on the gradients step() reads
//                                (ZeroAdamW: the ranks' averaged gradient shards, collective)
//   step(grad_scale)             step() with every gradient multiplied by grad_scale first
//                                (AdamW folds the scale into its update, same bits)
//   state_is_sharded             each rank's state_dict() holds only its share of the state
//                                (FSDP's sharded state dict); merge_state_dicts joins the
//                                ranks' dicts into one that load_state_dict takes at any world
//                                size. A whole state is the same on every rank.
// A loop that clips: norm = opt.grad_norm(model_params); opt.step(clip_scale(norm, c)).
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
  // step() reading every gradient multiplied by grad_scale (finite, >= 0): the bits of
  // scale_gradients_(grad_scale) then step(), which is the default.
  virtual void step(double grad_scale);

  // The global L2 norm of the gradients step() reads, before clipping. `order` lists the
  // parameters in the order their sums of squares are added (grad_norm of clip_grad.h; the
  // model's parameters() give the bits of clip_grad_norm_ on them); parameters without a
  // gradient count 0. An optimizer with sharded gradients ignores it: its norm is over the
  // ranks' shards, and the call is collective (every rank, after the same backward).
  virtual double grad_norm(const std::vector<Tensor>& order) const;
  double grad_norm() const { return grad_norm(parameters()); }
  // Multiplies the gradients step() reads by scale, in place (not collective).
  virtual void scale_gradients_(double scale);
  // torch.nn.utils.clip_grad_norm_: scales the gradients so that their global norm is at
  // most max_norm (clip_scale of clip_grad.h) and returns the norm before clipping.
  double clip_grad_norm_(double max_norm, const std::vector<Tensor>& order);
  double clip_grad_norm_(double max_norm) { return clip_grad_norm_(max_norm, parameters()); }

  // Clears (set_to_none) or zeroes every parameter's .grad.
  void zero_grad(bool set_to_none = true);
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  std::vector<Tensor> parameters() const;  // all groups, in order
  virtual nn::StateDict state_dict() const = 0;
  virtual void load_state_dict(const nn::StateDict& dict) = 0;
  // Whether state_dict() is this rank's share of the state (each rank must save its own).
  virtual bool state_is_sharded() const { return false; }
  // One dict from every rank's state_dict() (any world size), for load_state_dict. The
  // default, for a whole state: the first (every rank holds the same). Errors when empty.
  virtual nn::StateDict merge_state_dicts(const std::vector<nn::StateDict>& ranks) const;

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
