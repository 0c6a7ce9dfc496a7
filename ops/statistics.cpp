// Variance, standard deviation and vector norms, composed of reductions and elementwise
// ops: they run on every device and autograd differentiates the composition.
//
//   var(x, dims, c)  = sum((x - mean)^2) / max(0, N - c), N = the reduced element count,
//                      c = 1 PyTorch's unbiased estimate, c = 0 the population variance;
//   std_dev          = sqrt(var) (PyTorch's std; `std` would read as the namespace), with
//                      gradient 0 where var == 0 (a constant slice), as PyTorch's;
//   norm(x, p, dims) = (sum |x|^p)^(1/p), p = inf: max |x|, -inf: min |x|, 0: count of x != 0.
// The 2-norm (and every p-norm with p > 1) of an all-zero slice has gradient 0, as in
// PyTorch: the root is taken of where(s == 0, 1, s) and the result masked back to 0, so the
// infinite derivative of the root at 0 never meets the zero gradient of the sum.
#include <algorithm>
#include <cmath>

#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// The number of elements each output of a reduction over `dims` (empty: all) combines.
int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  if (dims.empty()) return x.numel();
  std::vector<int64_t> seen;
  int64_t n = 1;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, x.dim(), op);
    RG_CHECK(std::find(seen.begin(), seen.end(), w) == seen.end(), op, ": dim ", d, " repeated in ",
             shape_str(dims));
    seen.push_back(w);
    n *= x.size(w);
  }
  return n;
}

void check_floating(const Tensor& x, const char* op) {
  check_defined(op, x, "input");
  RG_CHECK(is_floating(x.dtype()), op, ": expected a floating-point input, got ", x.dtype());
}

// The root s^(1/p) of a non-negative s, with gradient 0 where s == 0.
Tensor safe_root(const Tensor& s, double p) {
  Tensor zero = scalar_tensor(0, s.dtype(), s.device());
  Tensor is_zero = eq(s, zero);
  Tensor safe = where(is_zero, scalar_tensor(1, s.dtype(), s.device()), s);
  Tensor root = p == 2 ? sqrt(safe) : pow(safe, 1.0 / p);
  return where(is_zero, zero, root);
}

// var's formula; errors name `op`.
Tensor variance(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim,
                const char* op) {
  check_floating(x, op);
  const int64_t n = reduced_count(x, dims, op);
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor squares = sum(square(centered), dims, keepdim);
  const double divisor = std::max(0.0, static_cast<double>(n) - correction);
  return div(squares, scalar_tensor(divisor, x.dtype(), x.device()));
}

}  // namespace

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  return variance(x, dims, correction, keepdim, "var");
}

Tensor std_dev(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  return safe_root(variance(x, dims, correction, keepdim, "std"), 2);
}

std::pair<Tensor, Tensor> var_mean(const Tensor& x, const std::vector<int64_t>& dims,
                                   double correction, bool keepdim) {
  return {var(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}

std::pair<Tensor, Tensor> std_mean(const Tensor& x, const std::vector<int64_t>& dims,
                                   double correction, bool keepdim) {
  return {std_dev(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}

Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  check_floating(x, "norm");
  RG_CHECK(!std::isnan(p), "norm: p must be a number, got nan");
  reduced_count(x, dims, "norm");  // checks the dims
  if (p == 0) {
    Tensor nonzero = ne(x, scalar_tensor(0, x.dtype(), x.device()));
    return sum(nonzero, dims, keepdim).to(x.dtype());
  }
  if (std::isinf(p)) {
    return p > 0 ? amax(abs(x), dims, keepdim) : amin(abs(x), dims, keepdim);
  }
  if (p == 1) return sum(abs(x), dims, keepdim);
  if (p == 2) return safe_root(sum(square(x), dims, keepdim), 2);
  return safe_root(sum(pow(abs(x), p), dims, keepdim), p);
}

}  // namespace rg
