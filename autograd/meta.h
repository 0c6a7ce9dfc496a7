// Per-tensor autograd state, stored in TensorImpl::autograd (null until needed).
#pragma once
#include <memory>
#include <vector>

#include "autograd/node.h"

namespace rg {

struct AutogradMeta : AutogradMetaInterface {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;             // set for non-leaf tensors
  std::weak_ptr<Node> grad_accumulator;      // leaf: cached AccumulateGrad
  std::vector<TensorHook> hooks;             // leaf: run before accumulation
  std::vector<PostAccumulateHook> post_accumulate_hooks;

  // What core's printing sees (core/tensor.h).
  bool requires_grad_flag() const override { return requires_grad; }
  const char* grad_fn_name() const override { return grad_fn ? grad_fn->name().c_str() : nullptr; }
};

AutogradMeta& autograd_meta(const Tensor& t);       // creates it when missing
AutogradMeta* autograd_meta_if(const Tensor& t);    // null when missing
// The node a gradient for `t` flows into: grad_fn, or the leaf's accumulator, or null.
std::shared_ptr<Node> gradient_edge(const Tensor& t);

}  // namespace rg
