// cumsum: running sums along a dim by the `cumsum` kernel, which sums each line in order in
// double (int64 for integers), so results do not depend on the device or thread count.
// Integer and bool inputs give int64, as PyTorch's.
//   d(cumsum): dx[k] = sum of grad[j] for j >= k, the reversed cumsum of grad.
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

Tensor cumsum_raw(const Tensor& x, int64_t dim, bool reverse) {
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  RG_KERNEL(x.device(), cumsum)(out, x.detach(), dim, reverse);
  return out;
}

struct CumsumDerivative {
  int64_t dim;
  std::vector<Tensor> operator()(const Tensor& grad) const { return {cumsum_raw(grad, dim, true)}; }
};

}  // namespace

Tensor cumsum(const Tensor& x_in, int64_t dim) {
  const char* op = "cumsum";
  check_defined(op, x_in, "input");
  const int64_t d = wrap_dim(dim, x_in.dim(), op);
  Tensor x = x_in.dim() == 0 ? reshape(x_in, {1}) : x_in;
  if (!is_floating(x.dtype()) && x.dtype() != DType::i64) x = x.to(DType::i64);
  Tensor out = cumsum_raw(x, d, false);
  if (needs_grad({x})) record(op, out, {x}, CumsumDerivative{d});
  return reshape(out, x_in.shape());
}

}  // namespace rg
