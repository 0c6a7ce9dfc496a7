// AdamW (see nn/optim/adamw.h): state bookkeeping, and the parameters grouped into
// multi-tensor kernel calls (one per device, dtype, weight decay and step count), and the
// decay groups of the sharded optimizers.
#include "nn/optim/adamw.h"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "autograd/grad_mode.h"
#include "core/dispatch.h"
#include "kernels/adamw_scalars.h"
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

void AdamW::step() { step(1.0); }

// One adamw_multi call's worth of parameters: same device, dtype, weight decay and step.
struct AdamW::Group {
  Device device;
  DType dtype;
  double weight_decay;
  int64_t step;
  bool prescaled;  // gradients already scaled in their own dtype: the kernel reads them as is
  std::vector<AdamWTensors> sets;
};

// The gradient as the kernel reads it: in p's dtype, on p's device, contiguous. A gradient of
// another dtype is scaled in its own dtype first (as clip_grad_norm_'s mul_ would).
static Tensor gradient_for(const Tensor& p, const Tensor& grad, double grad_scale, bool prescale) {
  Tensor g = grad.detach();
  if (prescale) g = mul(g, scalar_tensor(grad_scale, g.dtype(), g.device()));
  return contiguous(g.to(p.device(), p.dtype()));
}

void AdamW::add_to_group(std::vector<Group>& groups, size_t i, const Tensor& p, const Tensor& grad,
                         double weight_decay, double grad_scale, bool advance) {
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
  if (advance) ++s.step;
  const bool prescaled = grad_scale != 1.0 && grad.dtype() != p.dtype();
  AdamWTensors set{p.detach(), gradient_for(p, grad, grad_scale, prescaled), s.exp_avg,
                   s.exp_avg_sq};
  for (Group& g : groups)
    if (g.device == p.device() && g.dtype == p.dtype() && g.weight_decay == weight_decay &&
        g.step == s.step && g.prescaled == prescaled) {
      g.sets.push_back(std::move(set));
      return;
    }
  groups.push_back({p.device(), p.dtype(), weight_decay, s.step, prescaled, {std::move(set)}});
}

void AdamW::step(double grad_scale) {
  RG_CHECK(std::isfinite(grad_scale) && grad_scale >= 0,
           "AdamW.step: grad_scale must be finite and >= 0, got ", grad_scale);
  NoGradGuard no_grad;
  options.lr = lr_;
  std::vector<Group> groups;
  for_each_with_grad(options.weight_decay,
                     [&](size_t i, const Tensor& p, const Tensor& grad, double weight_decay) {
                       add_to_group(groups, i, p, grad, weight_decay, grad_scale);
                     });
  for (const Group& g : groups) {
    AdamWArgs args{lr_, options.beta1, options.beta2, options.eps, g.weight_decay, g.step};
    adamw_multi(g.sets, args, g.prescaled ? 1.0 : grad_scale);
    for (const AdamWTensors& set : g.sets) set.param.bump_version();
  }
}

// ---- capturable steps (see adamw.h). Each kernel call's scalars take kScalarWords i64 words.
namespace {
constexpr int64_t kScalarWords = 16;  // 128 bytes >= sizeof(AdamWScalars<double>)
constexpr int64_t kMaxCalls = 8;      // kernel calls (groups) a capturable step may make
static_assert(sizeof(AdamWScalars<double>) <= kScalarWords * 8);
}  // namespace

Tensor AdamW::capturable_scalars(Device device) const {
  RG_CHECK(!device.is_cpu(), "AdamW capturable step: needs a sim or cuda device, got cpu");
  return zeros({kMaxCalls * kScalarWords}, DType::i64, device);
}

std::vector<AdamW::Group> AdamW::capturable_groups(bool advance) {
  std::vector<Group> groups;
  for_each_with_grad(options.weight_decay,
                     [&](size_t i, const Tensor& p, const Tensor& grad, double weight_decay) {
                       add_to_group(groups, i, p, grad, weight_decay, 1.0, advance);
                     });
  RG_CHECK(int64_t(groups.size()) <= kMaxCalls, "AdamW capturable step: ", groups.size(),
           " kernel calls; at most ", kMaxCalls);
  return groups;
}

void AdamW::prepare_capturable_step(const Tensor& scalars) {
  NoGradGuard no_grad;
  options.lr = lr_;
  const std::vector<Group> groups = capturable_groups(true);
  std::vector<int64_t> words(size_t(kMaxCalls * kScalarWords), 0);
  capturable_dtypes_.clear();
  for (size_t j = 0; j < groups.size(); ++j) {
    const Group& g = groups[j];
    const AdamWArgs args{lr_, options.beta1, options.beta2, options.eps, g.weight_decay, g.step};
    dispatch_dtype<DTypes::f32_f64>(g.dtype, "AdamW", [&]<typename T>(TypeTag<T>) {
      AdamWScalars<T> s = adamw_scalars<T>(args, 1.0);
      s.scaled = true;  // g * 1 is g; set_capturable_grad_scale may write another scale
      std::memcpy(&words[j * kScalarWords], &s, sizeof(s));
    });
    capturable_dtypes_.push_back(g.dtype);
  }
  scalars.copy_(from_blob(words.data(), {int64_t(words.size())}, DType::i64, kCPU));
}

void AdamW::step_capturable(const Tensor& scalars) {
  NoGradGuard no_grad;
  const std::vector<Group> groups = capturable_groups(false);
  RG_CHECK(groups.size() == capturable_dtypes_.size(), "AdamW capturable step: ", groups.size(),
           " kernel calls, but prepare_capturable_step wrote ", capturable_dtypes_.size());
  for (size_t j = 0; j < groups.size(); ++j) {
    const Group& g = groups[j];
    RG_KERNEL(scalars.device(), adamw_multi_from_device)
    (g.sets, static_cast<const int64_t*>(scalars.data_ptr()) + j * kScalarWords);
    for (const AdamWTensors& set : g.sets) set.param.bump_version();
  }
}

void AdamW::set_capturable_grad_scale(const Tensor& scalars, const Tensor& grad_scale) {
  NoGradGuard no_grad;
  for (size_t j = 0; j < capturable_dtypes_.size(); ++j) {
    auto* words = static_cast<int64_t*>(scalars.data_ptr()) + j * kScalarWords;
    dispatch_dtype<DTypes::f32_f64>(capturable_dtypes_[j], "AdamW", [&]<typename T>(TypeTag<T>) {
      char* field = reinterpret_cast<char*>(words) + offsetof(AdamWScalars<T>, grad_scale);
      from_blob(field, {1}, capturable_dtypes_[j], scalars.device()).copy_(grad_scale);
    });
  }
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
      return clone(moment_entry(dict, i, name, p).detach().to(p.device(), p.dtype()));
    };
    state_[i].step = step_entry(dict, i);
    state_[i].exp_avg = load("exp_avg");
    state_[i].exp_avg_sq = load("exp_avg_sq");
    tag_optimizer_state({state_[i].exp_avg, state_[i].exp_avg_sq});
  }
}

void add_to_decay_group(std::vector<DecayGroup>& groups, double weight_decay, AdamWTensors set) {
  for (DecayGroup& g : groups)
    if (g.weight_decay == weight_decay && g.sets[0].param.dtype() == set.param.dtype()) {
      g.sets.push_back(std::move(set));
      return;
    }
  groups.push_back({weight_decay, {std::move(set)}});
}

}  // namespace rg::optim
