// Optimizer base (see nn/optim/optimizer.h).
#include "nn/optim/optimizer.h"

#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "core/memory_accounting.h"
#include "nn/optim/clip_grad.h"

namespace rg::optim {

Optimizer::Optimizer(std::vector<ParamGroup> groups, double lr, const char* name)
    : groups_(std::move(groups)), lr_(lr), name_(name) {
  RG_CHECK(lr >= 0, name_, ": learning rate must be >= 0, got ", lr);
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params)
      RG_CHECK(p.defined() && is_floating(p.dtype()), name_,
               ": parameters must be defined floating-point tensors");
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (ParamGroup& group : groups_)
    for (Tensor& p : group.params) {
      if (set_to_none) {
        p.set_grad(Tensor());
      } else if (p.grad().defined()) {
        p.grad().detach().zero_();
      }
    }
}

void Optimizer::step(double grad_scale) {
  RG_CHECK(std::isfinite(grad_scale) && grad_scale >= 0, name_,
           ".step: grad_scale must be finite and >= 0, got ", grad_scale);
  if (grad_scale != 1.0) scale_gradients_(grad_scale);
  step();
}

double Optimizer::grad_norm(const std::vector<Tensor>& order) const {
  return optim::grad_norm(order);
}

void Optimizer::scale_gradients_(double scale) { optim::scale_gradients_(parameters(), scale); }

double Optimizer::clip_grad_norm_(double max_norm, const std::vector<Tensor>& order) {
  RG_CHECK(max_norm > 0, name_, ".clip_grad_norm_: max_norm must be positive, got ", max_norm);
  const double norm = grad_norm(order);
  const double scale = clip_scale(norm, max_norm);
  if (scale < 1.0) scale_gradients_(scale);
  return norm;
}

nn::StateDict Optimizer::merge_state_dicts(const std::vector<nn::StateDict>& ranks) const {
  RG_CHECK(!ranks.empty(), name_, ".merge_state_dicts: no state dicts to merge");
  return ranks.front();
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const ParamGroup& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

const Tensor& Optimizer::state_entry(const nn::StateDict& dict, size_t index,
                                     const char* name) const {
  const std::string key = "state." + std::to_string(index) + "." + name;
  const Tensor* t = dict.find(key);
  RG_CHECK(t != nullptr, name_, ".load_state_dict: missing key '", key, "'");
  return *t;
}

const Tensor& Optimizer::moment_entry(const nn::StateDict& dict, size_t index, const char* name,
                                      const Tensor& param) const {
  const Tensor& t = state_entry(dict, index, name);
  const std::string key = "state." + std::to_string(index) + "." + name;
  RG_CHECK(is_floating(t.dtype()), name_, ".load_state_dict: '", key, "' has dtype ",
           dtype_name(t.dtype()), ", its parameter ", index, " has ", dtype_name(param.dtype()));
  RG_CHECK(t.shape() == param.shape(), name_, ".load_state_dict: '", key, "' has shape ",
           shape_str(t.shape()), ", its parameter ", index, " has ", shape_str(param.shape()));
  return t;
}

int64_t Optimizer::step_entry(const nn::StateDict& dict, size_t index) const {
  const Tensor& t = state_entry(dict, index, "step");
  const std::string key = "state." + std::to_string(index) + ".step";
  RG_CHECK(t.numel() == 1, name_, ".load_state_dict: '", key, "' has shape ", shape_str(t.shape()),
           ", not one number");
  const double step = t.item();
  RG_CHECK(std::isfinite(step) && step >= 0 && step <= 9e15 && step == std::floor(step), name_,
           ".load_state_dict: '", key, "' is ", step, ", not a step count");
  return static_cast<int64_t>(step);
}

void Optimizer::tag_optimizer_state(std::initializer_list<Tensor> state) {
  for (const Tensor& t : state) tag_memory(*t.storage(), MemoryCategory::optimizer_state);
}

}  // namespace rg::optim
