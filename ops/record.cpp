#include "ops/record.h"

#include "autograd/meta.h"

namespace rg {

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(const char* op, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn backward) {
  auto node = std::make_shared<FunctionNode>(op, std::move(backward));
  node->next.reserve(inputs.size());
  for (const Tensor& t : inputs)
    node->next.push_back(t.defined() && t.requires_grad() ? gradient_edge(t) : nullptr);
  AutogradMeta& meta = autograd_meta(out);
  meta.grad_fn = std::move(node);
  meta.requires_grad = true;
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  RG_CHECK(a.device() == b.device(), op, ": expected all tensors on the same device, got ",
           a.device().str(), " and ", b.device().str());
}

void check_defined(const char* op, const Tensor& t, const char* what) {
  RG_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

}  // namespace rg
