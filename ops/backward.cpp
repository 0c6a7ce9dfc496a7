// Tensor::backward: the seed gradient, then the engine (autograd/engine.h). The engine
// borrows add, in-place add, clone and dtype conversion from this layer; they are handed
// in here, on the only way into it, so the engine never includes ops.
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "ops/ops.h"

namespace rg {

namespace {

void register_grad_arithmetic() {
  static const bool registered = [] {
    GradArithmetic ops;
    ops.add = [](const Tensor& a, const Tensor& b) { return add(a, b); };
    ops.add_into = [](const Tensor& acc, const Tensor& g) { acc.add_(g); };
    ops.clone = [](const Tensor& t) { return t.clone(); };
    ops.convert = [](const Tensor& t, DType dtype) { return t.to(dtype); };
    set_grad_arithmetic(ops);
    return true;
  }();
  (void)registered;
}

}  // namespace

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  register_grad_arithmetic();
  Tensor grad = gradient;
  if (!grad.defined()) {
    RG_CHECK(numel() == 1,
             "backward: grad can be implicitly created only for scalar outputs; "
             "this tensor has shape ",
             shape_str(shape()), " (pass a gradient of that shape)");
    grad = ones(shape(), dtype(), device());
  } else {
    RG_CHECK(grad.shape() == shape(), "backward: gradient of shape ", shape_str(grad.shape()),
             " does not match the tensor's shape ", shape_str(shape()));
  }
  run_backward(*this, grad, retain_graph);
}

}  // namespace rg
