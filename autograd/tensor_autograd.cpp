// Tensor's autograd accessors and the hook registration functions.
#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "autograd/meta.h"

namespace rg {

AutogradMeta& autograd_meta(const Tensor& t) {
  TensorImpl* impl = t.impl();
  RG_CHECK(impl != nullptr, "autograd: use of an undefined tensor");
  if (!impl->autograd) impl->autograd = std::make_shared<AutogradMeta>();
  return static_cast<AutogradMeta&>(*impl->autograd);
}

AutogradMeta* autograd_meta_if(const Tensor& t) {
  // Every autograd slot holds an AutogradMeta: only autograd_meta() above fills it.
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd.get()) : nullptr;
}

std::shared_ptr<Node> gradient_edge(const Tensor& t) {
  AutogradMeta* meta = autograd_meta_if(t);
  if (!meta) return nullptr;
  if (meta->grad_fn) return meta->grad_fn;
  if (!meta->requires_grad) return nullptr;
  auto acc = meta->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    meta->grad_accumulator = acc;
  }
  return acc;
}

bool Tensor::requires_grad() const {
  AutogradMeta* meta = autograd_meta_if(*this);
  return meta && (meta->requires_grad || meta->grad_fn);
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  AutogradMeta* meta = autograd_meta_if(*this);
  RG_CHECK(!(meta && meta->grad_fn) || requires_grad,
           "requires_grad_: cannot turn off requires_grad of a non-leaf tensor (use detach())");
  if (requires_grad)
    RG_CHECK(is_floating(dtype()), "requires_grad_: only floating-point tensors can require "
             "gradients, got ", dtype());
  if (meta || requires_grad) autograd_meta(*this).requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  AutogradMeta* meta = autograd_meta_if(*this);
  return !meta || !meta->grad_fn;
}

Tensor Tensor::grad() const {
  AutogradMeta* meta = autograd_meta_if(*this);
  return meta ? meta->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined())
    RG_CHECK(grad.shape() == shape(), "set_grad: gradient of shape ", shape_str(grad.shape()),
             " does not match the tensor's shape ", shape_str(shape()));
  autograd_meta(*this).grad = grad;
}

Tensor& Tensor::mutable_grad() { return autograd_meta(*this).grad; }

std::shared_ptr<Node> Tensor::grad_fn() const {
  AutogradMeta* meta = autograd_meta_if(*this);
  return meta ? meta->grad_fn : nullptr;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(*this->impl());
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

void Tensor::retain_grad() const {
  auto fn = grad_fn();
  if (!fn) return;  // leaves keep their grad anyway
  fn->retained = impl_ptr();
}

void register_hook(const Tensor& t, TensorHook hook) {
  RG_CHECK(t.requires_grad(), "register_hook: the tensor does not require grad");
  if (auto fn = t.grad_fn()) fn->pre_hooks.push_back(std::move(hook));
  else autograd_meta(t).hooks.push_back(std::move(hook));
}

void register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateHook hook) {
  RG_CHECK(leaf.is_leaf() && leaf.requires_grad(),
           "register_post_accumulate_grad_hook: only leaf tensors that require grad have one");
  autograd_meta(leaf).post_accumulate_hooks.push_back(std::move(hook));
}

}  // namespace rg
