// Module: registration, traversal, modes, in-place conversion and state_dict loading.
#include "nn/module.h"

#include <algorithm>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "core/memory_accounting.h"

namespace rg::nn {
namespace {

void check_name(const std::string& owner, const std::string& kind, const std::string& name) {
  RG_CHECK(!name.empty() && name.find('.') == std::string::npos, owner, ": ", kind, " name '", name,
           "' must be non-empty and contain no '.'");
}

}  // namespace

// Points `t`'s TensorImpl at a converted copy of its data, so every handle to it (module
// members, optimizer lists, tied weights) sees the new device/dtype.
void convert_in_place(const Tensor& t, Device device, DType dtype) {
  if (t.device() == device && t.dtype() == dtype) return;
  Tensor converted = rg::to(t.detach(), device, dtype).contiguous();
  TensorImpl* impl = t.impl();
  impl->storage = converted.storage();
  impl->strides = converted.strides();
  impl->offset = converted.offset();
  impl->dtype = converted.dtype();
}

Tensor Module::forward(const Tensor&) {
  RG_FAIL(type_name_, ": has no single-input forward(x); call its own forward overload");
}

Tensor Module::operator()(const Tensor& x) {
  for (const ForwardPreHook& hook : pre_hooks_) hook(*this);
  Tensor output = forward(x);
  for (const ForwardHook& hook : hooks_) hook(*this, output);
  return output;
}

Tensor& Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  check_name(type_name_, "parameter", name);
  RG_CHECK(tensor.defined(), type_name_, ": parameter '", name, "' is undefined");
  if (requires_grad && !tensor.requires_grad()) tensor.requires_grad_(true);
  tag_memory(*tensor.storage(), MemoryCategory::parameters);
  for (auto& e : parameters_)
    if (e.name == name) return e.tensor = tensor;
  parameters_.push_back({name, tensor, true});
  return parameters_.back().tensor;
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  check_name(type_name_, "buffer", name);
  if (tensor.defined()) tag_memory(*tensor.storage(), MemoryCategory::buffers);
  for (auto& e : buffers_)
    if (e.name == name) {
      e.persistent = persistent;
      return e.tensor = tensor;
    }
  buffers_.push_back({name, tensor, persistent});
  return buffers_.back().tensor;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(type_name_, "module", name);
  RG_CHECK(module != nullptr, type_name_, ": module '", name, "' is null");
  for (auto& c : children_)
    if (c.first == name) {
      c.second = std::move(module);
      return;
    }
  children_.emplace_back(name, std::move(module));
}

std::shared_ptr<Module> Module::child(const std::string& name) const {
  for (const auto& c : children_)
    if (c.first == name) return c.second;
  RG_FAIL(type_name_, ": no child module named '", name, "'");
}

void Module::collect(const std::string& prefix, bool params, bool recurse, bool with_non_persistent,
                     std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& e : params ? parameters_ : buffers_)
    if (e.tensor.defined() && (e.persistent || with_non_persistent))
      out.emplace_back(prefix + e.name, e.tensor);
  if (!recurse) return;
  for (const auto& [name, module] : children_)
    module->collect(prefix + name + ".", params, true, with_non_persistent, out);
}

namespace {
std::vector<std::pair<std::string, Tensor>> dedup(std::vector<std::pair<std::string, Tensor>> in) {
  std::unordered_set<const TensorImpl*> seen;
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& item : in)
    if (seen.insert(item.second.impl()).second) out.push_back(std::move(item));
  return out;
}
}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> all;
  collect("", true, recurse, true, all);
  return dedup(std::move(all));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& item : named_parameters(recurse)) out.push_back(item.second);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> all;
  collect("", false, recurse, true, all);
  return dedup(std::move(all));
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  on_train(on);
  for (auto& c : children_) c.second->train(on);
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : parameters()) {
    if (set_to_none) {
      p.set_grad(Tensor());
    } else if (p.grad().defined()) {
      p.grad().detach().zero_();
    }
  }
}

void Module::convert(Device device, DType dtype, bool change_dtype) {
  NoGradGuard no_grad;
  auto target = [&](const Tensor& t) {
    return change_dtype && is_floating(t.dtype()) ? dtype : t.dtype();
  };
  for (auto& [name, p] : named_parameters()) {
    DType d = target(p);
    convert_in_place(p, device, d);
    Tensor g = p.grad();
    if (g.defined()) convert_in_place(g, device, d);
  }
  for (auto& [name, b] : named_buffers()) convert_in_place(b, device, target(b));
}

void Module::to(Device device) { convert(device, DType::f32, false); }
void Module::to(DType dtype) {
  RG_CHECK(is_floating(dtype), type_name_, ".to: expected a floating dtype, got ", dtype);
  auto params = parameters();
  convert(params.empty() ? kCPU : params.front().device(), dtype, true);
}
void Module::to(Device device, DType dtype) {
  RG_CHECK(is_floating(dtype), type_name_, ".to: expected a floating dtype, got ", dtype);
  convert(device, dtype, true);
}

StateDict Module::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> all;
  collect("", true, true, false, all);
  collect("", false, true, false, all);
  StateDict dict;
  for (auto& [name, t] : all) dict.insert(name, t);
  return dict;
}

namespace {

using Named = std::pair<std::string, Tensor>;

// The model's entries grouped by tensor: a tied weight is one group with several names
// (GPT: transformer.wte.weight and lm_head.weight), in state_dict order.
std::vector<std::vector<Named>> alias_groups(const StateDict& own) {
  std::vector<std::vector<Named>> groups;
  for (const auto& [name, t] : own) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.front().second.impl() == t.impl(); });
    if (it == groups.end())
      groups.push_back({{name, t}});
    else
      it->push_back({name, t});
  }
  return groups;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// One tied tensor stored under several of its names must hold the same values under each.
void check_tied_copies(const std::vector<Named>& group, const StateDict& dict,
                       std::vector<std::string>& conflicts) {
  const Named* first = nullptr;
  for (const auto& item : group) {
    const Tensor* src = dict.find(item.first);
    if (!src || src->shape() != item.second.shape()) continue;
    if (!first) {
      first = &item;
      continue;
    }
    const Tensor& a = dict.at(first->first);
    if (!equal(a.to(kCPU, item.second.dtype()), src->to(kCPU, item.second.dtype())))
      conflicts.push_back(str(first->first, " and ", item.first,
                              " (tied: the same weight, but the checkpoint's values differ)"));
  }
}

}  // namespace

// A tied weight counts as present when the checkpoint holds it under any of its names
// (files that store it once, as safetensors' save_model does, load under strict).
void Module::load_state_dict(const StateDict& dict, bool strict) {
  StateDict own = state_dict();
  const auto groups = alias_groups(own);
  std::vector<std::string> missing, unexpected, mis_shaped, conflicts;
  for (const auto& group : groups) {
    bool present = false;
    for (const auto& [name, t] : group) {
      const Tensor* src = dict.find(name);
      present = present || src;
      if (src && src->shape() != t.shape())
        mis_shaped.push_back(str(name, " (checkpoint ", shape_str(src->shape()), ", model ",
                                 shape_str(t.shape()), ")"));
    }
    if (!present)
      for (const auto& item : group) missing.push_back(item.first);
    check_tied_copies(group, dict, conflicts);
  }
  for (const auto& [name, t] : dict)
    if (!own.contains(name)) unexpected.push_back(name);
  const bool fail = !mis_shaped.empty() || !conflicts.empty() ||
                    (strict && (!missing.empty() || !unexpected.empty()));
  if (fail) {
    std::string msg = type_name_ + ".load_state_dict: checkpoint does not match the model";
    if (strict && !missing.empty()) msg += "; missing keys: " + join(missing);
    if (strict && !unexpected.empty()) msg += "; unexpected keys: " + join(unexpected);
    if (!mis_shaped.empty()) msg += "; mis-shaped keys: " + join(mis_shaped);
    if (!conflicts.empty()) msg += "; differing tied keys: " + join(conflicts);
    throw Error(msg);
  }
  NoGradGuard no_grad;
  for (const auto& group : groups)
    for (const auto& [name, t] : group)
      if (const Tensor* src = dict.find(name)) {
        t.detach().copy_(*src);
        break;  // the other names are the same tensor, checked equal above
      }
}

}  // namespace rg::nn
