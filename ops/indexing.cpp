// Indexing along one dim: gather (take_along_dim, index_select) and the writes scatter,
// scatter_add, index_add, index_put. Two kernels do all of it (core/op_table.h): `gather`
// reads x at an index tensor of x's rank, `index_put` writes (or adds) at one, in index
// order, so every result is reproducible. The 1-D index of index_select and friends is
// viewed as such a tensor by expanding it (stride 0), which the kernels read as it is.
//   d(gather):      dx = zeros with grad added at index (index_put, accumulate)
//   d(scatter):     dx = grad with the written positions zeroed, dsrc = gather(grad, index)
//   d(scatter_add): dx = grad, dsrc = gather(grad, index)
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// A 0-d tensor as 1-d of size 1 (the kernels index a dim); others as they are.
Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? reshape(t, {1}) : t; }

Tensor index_as_i64(const char* op, const Tensor& index, const Tensor& x) {
  check_defined(op, index, "index");
  RG_CHECK(index.dtype() == DType::i64 || index.dtype() == DType::i32, op,
           ": index must be int64 or int32, got ", index.dtype());
  check_same_device(op, x, index);
  return index.dtype() == DType::i64 ? index : index.to(DType::i64);
}

// index (at least 1-d) of x's rank, each other dim at most x's.
void check_index_shape(const char* op, const Tensor& x, const Tensor& index, int64_t dim) {
  RG_CHECK(index.dim() == x.dim(), op, ": index ", shape_str(index.shape()),
           " must have as many dims as the input ", shape_str(x.shape()));
  for (int64_t d = 0; d < x.dim(); ++d)
    RG_CHECK(d == dim || index.size(d) <= x.size(d), op, ": index ", shape_str(index.shape()),
             " is larger than the input ", shape_str(x.shape()), " at dim ", d);
}

// grad of x's shape: zeros with `grad` (index's shape) added at index along dim.
Tensor scatter_add_raw(const Shape& shape, const Tensor& index, const Tensor& grad, int64_t dim) {
  Tensor out = zeros(shape, grad.dtype(), grad.device());
  RG_KERNEL(grad.device(), index_put)(out, index, grad, dim, true);
  return out;
}

Tensor gather_raw(const Tensor& x, const Tensor& index, int64_t dim) {
  Tensor out = empty(index.shape(), x.dtype(), x.device());
  RG_KERNEL(x.device(), gather)(out, x.detach(), index, dim);
  return out;
}

struct GatherDerivative {
  SavedTensor index;
  Shape x_shape;
  int64_t dim;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    return {scatter_add_raw(x_shape, index.get(), grad, dim)};
  }
};

struct ScatterDerivative {
  SavedTensor index;
  int64_t dim;
  bool accumulate;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor idx = index.get();
    Tensor dx = grad;
    if (!accumulate) {
      dx = clone(grad);
      Tensor zero = zeros({}, grad.dtype(), grad.device()).expand(idx.shape());
      RG_KERNEL(grad.device(), index_put)(dx, idx, zero, dim, false);
    }
    return {dx, gather_raw(grad, idx, dim)};
  }
};

// scatter / scatter_add on at-least-1-d tensors; src already of index's shape.
Tensor scatter_impl(const char* op, const Tensor& x, int64_t dim, const Tensor& index_in,
                    const Tensor& src_in, bool accumulate) {
  check_defined(op, x, "input");
  check_defined(op, src_in, "src");
  check_same_device(op, x, src_in);
  RG_CHECK(src_in.dtype() == x.dtype(), op, ": src (", src_in.dtype(),
           ") must have the input's dtype ", x.dtype());
  RG_CHECK(!accumulate || x.dtype() != DType::b8, op, ": cannot add bool tensors");
  const Tensor index = at_least_1d(index_as_i64(op, index_in, x));
  const Tensor x1 = at_least_1d(x);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  check_index_shape(op, x1, index, d);
  Tensor src = at_least_1d(src_in);
  RG_CHECK(src.dim() == index.dim(), op, ": src ", shape_str(src.shape()),
           " must have as many dims as the index ", shape_str(index.shape()));
  for (int64_t k = 0; k < src.dim(); ++k) {
    RG_CHECK(src.size(k) >= index.size(k), op, ": src ", shape_str(src.shape()),
             " is smaller than the index ", shape_str(index.shape()), " at dim ", k);
    if (src.size(k) > index.size(k)) src = narrow(src, k, 0, index.size(k));
  }
  Tensor out = clone(x1.detach());
  RG_KERNEL(x.device(), index_put)(out, index, src.detach(), d, accumulate);
  if (needs_grad({x1, src}))
    record(op, out, {x1, src}, ScatterDerivative{SavedTensor(index, op), d, accumulate});
  return reshape(out, x.shape());
}

// A 1-D index along dim viewed as an index tensor of `shape` (shape[dim] = its length).
Tensor expand_index(const char* op, const Tensor& index_in, const Tensor& x, int64_t dim,
                    Shape shape) {
  Tensor index = index_as_i64(op, index_in, x);
  RG_CHECK(index.dim() <= 1, op, ": index must be 0-d or 1-d, got ", shape_str(index.shape()));
  Shape single(std::max<int64_t>(x.dim(), 1), 1);
  single[dim] = index.numel();
  shape[dim] = index.numel();
  return expand(reshape(index, single), shape);
}

Shape at_least_1d_shape(const Tensor& x) { return x.dim() == 0 ? Shape{1} : x.shape(); }

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index_in) {
  const char* op = "gather";
  check_defined(op, x, "input");
  const Tensor index = at_least_1d(index_as_i64(op, index_in, x));
  const Tensor x1 = at_least_1d(x);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  check_index_shape(op, x1, index, d);
  Tensor out = gather_raw(x1, index, d);
  if (needs_grad({x1}))
    record(op, out, {x1}, GatherDerivative{SavedTensor(index, op), x1.shape(), d});
  return reshape(out, index_in.shape());
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, int64_t dim) {
  const char* op = "take_along_dim";
  check_defined(op, x, "input");
  check_defined(op, indices, "indices");
  RG_CHECK(x.dim() == indices.dim(), op, ": input ", shape_str(x.shape()), " and indices ",
           shape_str(indices.shape()), " must have as many dims");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Shape xs = x.shape(), is = indices.shape();
  if (x.dim() > 0) xs[d] = is[d] = 1;
  const Shape common = broadcast_shapes(xs, is, op);
  Shape x_shape = common, i_shape = common;
  if (x.dim() > 0) x_shape[d] = x.size(d), i_shape[d] = indices.size(d);
  return gather(expand(x, x_shape), d, expand(indices, i_shape));
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", x, dim, index, src, false);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value) {
  check_defined("scatter", x, "input");
  check_defined("scatter", index, "index");
  Tensor src = full({}, value, x.dtype(), x.device()).expand(index.shape());
  return scatter_impl("scatter", x, dim, index, src, false);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", x, dim, index, src, true);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  check_defined(op, x, "input");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor out = gather(at_least_1d(x), d, expand_index(op, index, x, d, at_least_1d_shape(x)));
  return x.dim() == 0 ? reshape(out, index.shape()) : out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 double alpha) {
  const char* op = "index_add";
  check_defined(op, x, "input");
  check_defined(op, source, "source");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Shape want = at_least_1d_shape(x);
  Tensor idx = expand_index(op, index, x, d, want);
  RG_CHECK(at_least_1d(source).shape() == idx.shape(), op, ": source ", shape_str(source.shape()),
           " must be ", shape_str(idx.shape()));
  Tensor src = alpha == 1 ? at_least_1d(source) : mul(at_least_1d(source), alpha);
  return reshape(scatter_add(at_least_1d(x), d, idx, src), x.shape());
}

Tensor index_put(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& values,
                 bool accumulate) {
  const char* op = "index_put";
  check_defined(op, x, "input");
  check_defined(op, values, "values");
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor idx = expand_index(op, index, x, d, at_least_1d_shape(x));
  Tensor v = values.dtype() == x.dtype() ? values : values.to(x.dtype());
  v = expand(v, idx.shape());
  Tensor out =
      accumulate ? scatter_add(at_least_1d(x), d, idx, v) : scatter(at_least_1d(x), d, idx, v);
  return reshape(out, x.shape());
}

}  // namespace rg
