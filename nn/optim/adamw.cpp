// AdamW (see nn/optim/adamw.h): state bookkeeping around the fused per-parameter kernel.
#include "nn/optim/adamw.h"

#include <string>

#include "autograd/grad_mode.h"
#include "kernels/builtin.h"

namespace rg::optim {

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions opts)
    : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params), std::nullopt}}, opts) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions opts)
    : Optimizer(std::move(groups), opts.lr, "AdamW"), options(opts) {
  RG_CHECK(opts.beta1 >= 0 && opts.beta1 < 1 && opts.beta2 >= 0 && opts.beta2 < 1,
           "AdamW: betas must be in [0, 1), got (", opts.beta1, ", ", opts.beta2, ")");
  RG_CHECK(opts.eps >= 0 && opts.weight_decay >= 0, "AdamW: eps ", opts.eps, " and weight_decay ",
           opts.weight_decay, " must be >= 0");
  for (const Tensor& p : parameters())
    RG_CHECK(p.is_contiguous(), "AdamW: parameters must be contiguous, got strides for shape ",
             shape_str(p.shape()));
  state_.resize(parameters().size());
}

void AdamW::step() {
  NoGradGuard no_grad;
  options.lr = lr_;
  for_each_with_grad(options.weight_decay, [&](size_t i, const Tensor& p, const Tensor& grad,
                                               double weight_decay) {
    RG_CHECK(grad.shape() == p.shape(), "AdamW: gradient ", shape_str(grad.shape()),
             " does not match parameter ", shape_str(p.shape()));
    RG_CHECK(p.dtype() == DType::f32 || p.dtype() == DType::f64, "AdamW: parameter ", i,
             " has dtype ", p.dtype(), "; the fused update takes float32 or float64");
    State& s = state_[i];
    if (!s.exp_avg.defined()) {
      s.exp_avg = zeros_like(p);
      s.exp_avg_sq = zeros_like(p);
      tag_optimizer_state({s.exp_avg, s.exp_avg_sq});
    }
    ++s.step;
    Tensor g = contiguous(grad.detach().to(p.device(), p.dtype()));
    AdamWArgs args{lr_, options.beta1, options.beta2, options.eps, weight_decay, s.step};
    RG_KERNEL(p.device(), adamw)(p.detach(), g, s.exp_avg, s.exp_avg_sq, args);
    p.bump_version();
  });
}

nn::StateDict AdamW::state_dict() const {
  nn::StateDict dict;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (!state_[i].exp_avg.defined()) continue;
    const std::string key = "state." + std::to_string(i) + ".";
    dict.insert(key + "step", scalar_tensor(static_cast<double>(state_[i].step), DType::i64));
    dict.insert(key + "exp_avg", state_[i].exp_avg);
    dict.insert(key + "exp_avg_sq", state_[i].exp_avg_sq);
  }
  return dict;
}

void AdamW::load_state_dict(const nn::StateDict& dict) {
  std::vector<Tensor> params = parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    state_[i] = State{};
    if (!dict.contains("state." + std::to_string(i) + ".step")) continue;
    const Tensor& p = params[i];
    auto load = [&](const char* name) {
      const Tensor& t = state_entry(dict, i, name);
      RG_CHECK(t.shape() == p.shape(), "AdamW.load_state_dict: ", name, " of parameter ", i,
               " has shape ", shape_str(t.shape()), ", parameter has ", shape_str(p.shape()));
      return clone(t.detach().to(p.device(), p.dtype()));
    };
    state_[i].step = static_cast<int64_t>(state_entry(dict, i, "step").item());
    state_[i].exp_avg = load("exp_avg");
    state_[i].exp_avg_sq = load("exp_avg_sq");
    tag_optimizer_state({state_[i].exp_avg, state_[i].exp_avg_sq});
  }
}

}  // namespace rg::optim
