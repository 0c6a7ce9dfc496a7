// softmax and log_softmax along a dim, fused forward and backward kernels.
// Backward uses the output y: softmax dx = y * (dy - sum(dy * y)); log_softmax
// dx = dy - exp(y) * sum(dy).
#include "kernels/builtin.h"
#include "ops/autocast.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(softmax) and d(log_softmax) from the output y, by the fused backward kernel.
struct SoftmaxDerivative {
  SavedTensor y;
  int64_t dim;
  bool log;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor out = y.get();
    Tensor dx = empty(out.shape(), out.dtype(), out.device());
    if (dx.numel()) RG_KERNEL(out.device(), softmax_backward)
    (dx, contiguous(grad), out, out.dim() ? dim : 0, log);
    return {dx};
  }
};

Tensor softmax_impl(const Tensor& x_in, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_defined(name, x_in, "input");
  RG_CHECK(is_floating(x_in.dtype()), name, ": expected a floating-point input, got ",
           x_in.dtype());
  int64_t d = wrap_dim(dim, x_in.dim(), name);
  Tensor x = contiguous(x_in);
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  if (out.numel()) RG_KERNEL(x.device(), softmax)(out, x.detach(), x.dim() ? d : 0, log);
  if (needs_grad({x})) record(name, out, {x}, SoftmaxDerivative{SavedTensor(out, name), d, log});
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return softmax_impl(autocast(AutocastOp::softmax, x), dim, false);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_impl(autocast(AutocastOp::log_softmax, x), dim, true);
}

}  // namespace rg
