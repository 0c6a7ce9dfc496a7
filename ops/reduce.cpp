// Reductions over a set of dims, one public function per row of RG_REDUCE_OPS
// (core/op_table.h) with the row's gradient, and sum_to, the reduction that undoes
// broadcasting in gradients. The kernel always produces the keepdim shape; dims are
// squeezed afterwards when keepdim is false.
#include <algorithm>
#include <string_view>

#include "kernels/builtin.h"
#include "ops/autocast.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

std::vector<int64_t> normalize_dims(const Tensor& x, const std::vector<int64_t>& dims,
                                    const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim(d, x.dim(), op));
  std::sort(out.begin(), out.end());
  RG_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), op, ": dim repeated in ",
           shape_str(dims));
  return out;
}

Shape keepdim_shape(const Tensor& x, const std::vector<int64_t>& dims) {
  Shape shape = x.shape();
  for (int64_t d : dims) shape[d] = 1;
  return shape;
}

Tensor drop_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  Tensor out = t;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) out = squeeze(out, *it);
  return out;
}

Tensor reduce_raw(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, DType out_dtype) {
  Tensor out = empty(keepdim_shape(x, dims), out_dtype, x.device());
  if (out.numel() == 0) return out;
  // Dims of size 1 reduce to themselves; the kernels only see dims that really reduce.
  std::vector<int64_t> real;
  for (int64_t d : dims)
    if (x.shape()[d] != 1) real.push_back(d);
  if (!real.empty())
    RG_KERNEL(x.device(), reduce)(op, out, x, real);
  else if (info(op).rule == ReduceRule::index)
    RG_KERNEL(x.device(), fill)(out, 0.0);
  else
    RG_KERNEL(x.device(), copy)(out, x);
  return out;
}

int64_t count_of(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  return n;
}

// The helpers the table's gradient expressions call (see RG_REDUCE_OPS): g and y have the
// keepdim shape, x the input's.
struct GradientHelpers {
  const char* name;
  const std::vector<int64_t>& dims;
  const Shape& in_shape;

  Tensor broadcast(const Tensor& t) const { return expand(t, in_shape); }
  // g split evenly between the elements equal to the result (ties of amax, amin).
  Tensor share_among_ties(const Tensor& g, const Tensor& x, const Tensor& y) const {
    Tensor hit = eq(x, y).to(g.dtype());
    return mul(hit, div(g, sum(hit, dims, true)));
  }
  // Each element's product of the other elements of its slice, without dividing by a zero:
  // no zero in the slice: prod / x; one zero: the product of the others at the zero, 0
  // elsewhere; more zeros: 0 (PyTorch's rule).
  Tensor product_of_others(const Tensor& x) const {
    Tensor zero = scalar_tensor(0, x.dtype(), x.device());
    Tensor is_zero = eq(x, zero);
    Tensor x_or_one = where(is_zero, scalar_tensor(1, x.dtype(), x.device()), x);
    Tensor nonzero_product = prod(x_or_one, dims, true);
    Tensor zeros = sum(is_zero, dims, true);  // int64
    Tensor no_zero = eq(zeros, scalar_tensor(0, zeros.dtype(), x.device()));
    Tensor one_zero = eq(zeros, scalar_tensor(1, zeros.dtype(), x.device()));
    return where(is_zero, where(one_zero, nonzero_product, zero),
                 where(no_zero, div(nonzero_product, x_or_one), zero));
  }
  [[noreturn]] Tensor no_gradient() const {
    RG_FAIL(name, ": has no gradient (its output is an index)");
  }
};

// dL/dx by the row's gradient expression.
Tensor reduce_gradient(ReduceOp op, const GradientHelpers& helpers, const Tensor& g,
                       const Tensor& x, const Tensor& y, double n) {
  auto broadcast = [&](const Tensor& t) { return helpers.broadcast(t); };
  auto share_among_ties = [&](const Tensor& gg, const Tensor& xx, const Tensor& yy) {
    return helpers.share_among_ties(gg, xx, yy);
  };
  auto product_of_others = [&](const Tensor& xx) { return helpers.product_of_others(xx); };
  auto no_gradient = [&]() -> Tensor { helpers.no_gradient(); };
  switch (op) {
#define RG_CASE(name, rule, kind, identity, combine, finish, gradient) \
  case ReduceOp::name:                                                 \
    return gradient;
    RG_REDUCE_OPS(RG_CASE)
#undef RG_CASE
  }
  RG_FAIL("reduce: op ", static_cast<int>(op), " is not in the op table");
}

struct ReduceDerivative {
  ReduceOp op;
  std::vector<int64_t> dims;
  Shape in_shape, kept_shape;
  double count;
  SavedTensor x, out;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    GradientHelpers helpers{op_name(op), dims, in_shape};
    return {reduce_gradient(op, helpers, reshape(grad, kept_shape), x.get(), out.get(), count)};
  }
};

// x as the reduction takes it under autocast: by the RG_AUTOCAST_OPS row (ops/autocast.h)
// of the same name if there is one (sum, mean), else x itself.
Tensor autocast_reduction(ReduceOp op, const Tensor& x) {
  const std::string_view name = op_name(op);
#define RG_AUTOCAST_IF_NAMED(autocast_op, policy) \
  if (name == #autocast_op) return autocast(AutocastOp::autocast_op, x);
  RG_AUTOCAST_OPS(RG_AUTOCAST_IF_NAMED)
#undef RG_AUTOCAST_IF_NAMED
  return x;
}

// The forward of the rows other than `index` ones: the row's rule checks (and widens) x.
Tensor reduce_values(ReduceOp op, const Tensor& x_in, const std::vector<int64_t>& dims_in,
                     bool keepdim) {
  const ReduceInfo& row = info(op);
  const char* name = row.name;
  check_defined(name, x_in, "input");
  std::vector<int64_t> dims = normalize_dims(x_in, dims_in, name);
  Tensor x = autocast_reduction(op, x_in);
  switch (row.rule) {
    case ReduceRule::widen:
      if (!is_floating(x.dtype())) x = x.to(DType::i64);
      break;
    case ReduceRule::floating:
      RG_CHECK(is_floating(x.dtype()), name, ": needs a floating-point input, got ", x.dtype());
      break;
    case ReduceRule::same:
      RG_CHECK(x.dtype() != DType::b8, name, ": not supported for bool tensors");
      break;
    case ReduceRule::index:
      RG_FAIL(name, ": returns an index; it takes one dim");
  }
  if (!row.allows_empty())
    for (int64_t d : dims)
      RG_CHECK(x.shape()[d] > 0, name, ": cannot reduce over dim ", d, " of size 0 (shape ",
               shape_str(x.shape()), ")");
  Tensor out = reduce_raw(op, x, dims, x.dtype());
  Tensor result = keepdim ? out : drop_dims(out, dims);
  if (!needs_grad({x})) return result;

  record(name, result, {x},
         ReduceDerivative{op, dims, x.shape(), out.shape(), static_cast<double>(count_of(x, dims)),
                          SavedTensor(x, name), SavedTensor(out, name)});
  return result;
}

Tensor arg_reduce(ReduceOp op, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = op_name(op);
  RG_CHECK(info(op).rule == ReduceRule::index, name, ": takes dims, not one dim");
  check_defined(name, x, "input");
  RG_CHECK(x.dtype() != DType::b8, name, ": not supported for bool tensors");
  int64_t d = wrap_dim(dim, x.dim(), name);
  if (x.dim() == 0) return zeros({}, DType::i64, x.device());
  RG_CHECK(x.shape()[d] > 0, name, ": cannot reduce over dim ", d, " of size 0 (shape ",
           shape_str(x.shape()), ")");
  Tensor out = reduce_raw(op, x.detach(), {d}, DType::i64);
  return keepdim ? out : squeeze(out, d);
}

}  // namespace

// One public function per row (declared by ops/ops.h from the same table).
#define RG_REDUCE_DEFINE(name, rule, ...) RG_REDUCE_DEFINE_##rule(name)
#define RG_REDUCE_DEFINE_DIMS(name)                                              \
  Tensor name(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) { \
    return reduce_values(ReduceOp::name, x, dims, keepdim);                      \
  }
#define RG_REDUCE_DEFINE_widen RG_REDUCE_DEFINE_DIMS
#define RG_REDUCE_DEFINE_floating RG_REDUCE_DEFINE_DIMS
#define RG_REDUCE_DEFINE_same RG_REDUCE_DEFINE_DIMS
#define RG_REDUCE_DEFINE_index(name)                        \
  Tensor name(const Tensor& x, int64_t dim, bool keepdim) { \
    return arg_reduce(ReduceOp::name, x, dim, keepdim);     \
  }
RG_REDUCE_OPS(RG_REDUCE_DEFINE)
#undef RG_REDUCE_DEFINE_index
#undef RG_REDUCE_DEFINE_same
#undef RG_REDUCE_DEFINE_floating
#undef RG_REDUCE_DEFINE_widen
#undef RG_REDUCE_DEFINE_DIMS
#undef RG_REDUCE_DEFINE
Tensor argmax(const Tensor& x) { return argmax(x.reshape({-1}), 0); }

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  RG_CHECK(lead >= 0, "sum_to: cannot reduce shape ", shape_str(x.shape()), " to ",
           shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead)
      dims.push_back(d);
    else if (shape[d - lead] == 1 && x.shape()[d] != 1)
      dims.push_back(d);
    else
      RG_CHECK(shape[d - lead] == x.shape()[d], "sum_to: cannot reduce shape ",
               shape_str(x.shape()), " to ", shape_str(shape));
  }
  Tensor out = dims.empty() ? x : sum(x, dims, true);
  return reshape(out, shape);
}

Tensor Tensor::sum() const { return rg::sum(*this); }
Tensor Tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return rg::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const { return rg::mean(*this); }
Tensor Tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return rg::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const { return rg::amax(*this); }
Tensor Tensor::max(int64_t dim, bool keepdim) const { return rg::amax(*this, {dim}, keepdim); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return rg::argmax(*this, dim, keepdim); }

}  // namespace rg
