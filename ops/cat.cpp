// cat along a dim (backward: narrow the gradient back into pieces) and split (views).
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(cat): the gradient narrowed back into one piece per input along the cat dim.
struct CatDerivative {
  std::vector<int64_t> sizes;
  int64_t dim;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    std::vector<Tensor> grads;
    int64_t at = 0;
    for (int64_t size : sizes) {
      grads.push_back(narrow(grad, dim, at, size));
      at += size;
    }
    return grads;
  }
};

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  RG_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[d] = 0;
  DType dtype = first.dtype();
  for (const Tensor& t : tensors) {
    check_same_device("cat", first, t);
    RG_CHECK(t.dim() == first.dim(), "cat: tensors must have the same number of dims, got shapes ",
             shape_str(first.shape()), " and ", shape_str(t.shape()));
    for (int64_t i = 0; i < t.dim(); ++i)
      RG_CHECK(i == d || t.shape()[i] == first.shape()[i], "cat: shapes ", shape_str(first.shape()),
               " and ", shape_str(t.shape()), " differ outside dim ", d);
    shape[d] += t.shape()[d];
    dtype = promote_types(dtype, t.dtype());
  }
  Tensor out = empty(shape, dtype, first.device());
  std::vector<int64_t> sizes;
  {
    NoGradGuard no_grad;
    int64_t at = 0;
    for (const Tensor& t : tensors) {
      sizes.push_back(t.shape()[d]);
      if (t.numel()) narrow(out, d, at, t.shape()[d]).copy_(t);
      at += t.shape()[d];
    }
  }
  if (needs_grad(tensors)) record("cat", out, tensors, CatDerivative{sizes, d});
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  RG_CHECK(split_size > 0, "split: split_size must be positive, got ", split_size);
  int64_t d = wrap_dim(dim, x.dim(), "split");
  std::vector<Tensor> parts;
  for (int64_t at = 0; at < x.shape()[d]; at += split_size)
    parts.push_back(narrow(x, d, at, std::min(split_size, x.shape()[d] - at)));
  return parts;
}

}  // namespace rg
