// Module: the base of every layer, like torch.nn.Module. A module owns named parameters
// (trainable leaves), buffers (state that is not trained, e.g. masks) and children, all
// kept in registration order. Names are dotted paths ("transformer.h.0.attn.c_attn.weight").
//
// Contract:
//  - parameters()/named_parameters() list each tensor once (first name wins), so a tied
//    weight (GPT's lm_head.weight is transformer.wte.weight) is optimised once;
//    state_dict() lists every name, as PyTorch's does.
//  - to(device/dtype) converts in place: each parameter keeps its identity (the same
//    TensorImpl), so optimizers, hooks and tied weights stay valid.
//  - load_state_dict copies values into the existing tensors; a tied weight may be stored
//    under one of its names (files written without the duplicate lm_head.weight).
// Modules are held by std::shared_ptr: auto model = std::make_shared<rg::nn::GPT>(config);
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/state_dict.h"
#include "ops/ops.h"

namespace rg::nn {

// Moves t's data to `device` and `dtype` in place: every handle of t (a Module's parameter, an
// optimizer's list, Python's object) sees the new storage. What Module::to does to each
// parameter, gradient and buffer.
void convert_in_place(const Tensor& t, Device device, DType dtype);

class Module {
 public:
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The single-input forward (layers, Sequential). Modules with other signatures (GPT)
  // add their own overloads; calling this one on them throws.
  virtual Tensor forward(const Tensor& x);
  // forward(x) with the forward hooks around it (PyTorch's module call). Containers that
  // want their children's hooks to run call children through it (GPT calls its blocks so).
  Tensor operator()(const Tensor& x);

  // ---- forward hooks (PyTorch's register_forward_pre_hook / register_forward_hook): run by
  // operator(), in registration order; a pre-hook before forward, a hook after it with the
  // output. FSDP (nn/fsdp.h) gathers a unit's parameters in one and frees them in the other.
  using ForwardPreHook = std::function<void(Module& module)>;
  using ForwardHook = std::function<void(Module& module, const Tensor& output)>;
  void register_forward_pre_hook(ForwardPreHook hook) { pre_hooks_.push_back(std::move(hook)); }
  void register_forward_hook(ForwardHook hook) { hooks_.push_back(std::move(hook)); }

  // ---- registration; registering a name again replaces the entry (used for weight tying)
  Tensor& register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Non-persistent buffers move with to() but stay out of state_dict().
  Tensor& register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // ---- traversal (registration order, depth first: own entries, then each child's)
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  std::shared_ptr<Module> child(const std::string& name) const;  // throws when absent
  int64_t num_parameters() const;                                // each tensor counted once
  const std::string& type_name() const { return type_name_; }

  // ---- modes and gradients
  void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad(bool set_to_none = true);

  // ---- conversion in place (floating parameters/buffers change dtype; others keep it)
  void to(Device device);
  void to(DType dtype);
  void to(Device device, DType dtype);

  // ---- checkpoints
  StateDict state_dict() const;
  // Copies values into this module's tensors (converting dtype/device). With strict, throws
  // one rg::Error listing missing keys, unexpected keys and keys whose shapes differ; without
  // strict, loads the keys present in both and still refuses shape mismatches. A tied tensor
  // is present when `dict` holds it under any of its names; holding it under several names
  // with different values is an error naming them.
  void load_state_dict(const StateDict& dict, bool strict = true);

 protected:
  // Children may override to react to a mode change (the default only stores the flag).
  virtual void on_train(bool) {}

 private:
  struct Entry {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void convert(Device device, DType dtype, bool change_dtype);
  void collect(const std::string& prefix, bool params, bool recurse, bool with_non_persistent,
               std::vector<std::pair<std::string, Tensor>>& out) const;

  std::string type_name_;
  bool training_ = true;
  std::vector<Entry> parameters_;
  std::vector<Entry> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<ForwardPreHook> pre_hooks_;
  std::vector<ForwardHook> hooks_;
};

}  // namespace rg::nn
