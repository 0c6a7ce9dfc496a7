// sort, argsort, topk, and max/min along a dim with their indices. The `sort` kernel orders
// each line stably (equal values keep their order, NaN above every number); topk is a sort
// cut to k. Values that need a gradient are re-read with gather(x, dim, indices), whose
// backward adds the gradient back at the indices they came from. max/min along a dim are
// argmax/argmin (NaN wins, ties give the first index) and a gather, so the gradient flows
// to the returned index only, as PyTorch's.
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

ValuesIndices sort(const Tensor& x, int64_t dim, bool descending, bool /*stable: always*/) {
  const char* op = "sort";
  check_defined(op, x, "input");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor x1 = x.dim() == 0 ? reshape(x, {1}) : x;
  Tensor values = empty(x1.shape(), x1.dtype(), x1.device());
  Tensor indices = empty(x1.shape(), DType::i64, x1.device());
  RG_KERNEL(x1.device(), sort)(values, indices, x1.detach(), d, descending);
  if (needs_grad({x1})) values = gather(x1, d, indices);
  return {reshape(values, x.shape()), reshape(indices, x.shape())};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  NoGradGuard no_grad;
  return sort(x, dim, descending, stable).indices;
}

ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  const char* op = "topk";
  check_defined(op, x, "input");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  const int64_t size = x.dim() == 0 ? 1 : x.size(d);
  RG_CHECK(k >= 0 && k <= size, op, ": k ", k, " out of range for dim ", dim, " of size ", size);
  Tensor x1 = x.dim() == 0 ? reshape(x, {1}) : x;
  Tensor indices;
  {
    NoGradGuard no_grad;
    indices = contiguous(narrow(sort(x1, d, largest).indices, d, 0, k));
  }
  Tensor values = gather(x1, d, indices);
  if (x.dim() == 0) return {reshape(values, {}), reshape(indices, {})};
  return {values, indices};
}

namespace {

ValuesIndices select_along(const char* op, const Tensor& x, int64_t dim, bool keepdim,
                           bool largest) {
  check_defined(op, x, "input");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor indices = largest ? argmax(x, d, true) : argmin(x, d, true);
  Tensor values = gather(x, d, indices);
  if (keepdim || x.dim() == 0) return {values, indices};
  return {squeeze(values, d), squeeze(indices, d)};
}

}  // namespace

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  return select_along("max", x, dim, keepdim, true);
}
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  return select_along("min", x, dim, keepdim, false);
}
Tensor max(const Tensor& x) { return amax(x); }
Tensor min(const Tensor& x) { return amin(x); }

}  // namespace rg
