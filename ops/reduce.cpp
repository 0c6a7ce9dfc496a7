// Reductions (sum, mean, amax, amin, argmax, argmin) over a set of dims, and sum_to, the
// reduction that undoes broadcasting in gradients. The kernel always produces the keepdim
// shape; dims are squeezed afterwards when keepdim is false.
#include <algorithm>

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
  else if (op == ReduceOp::argmax || op == ReduceOp::argmin)
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

// d(sum): the gradient expanded over the reduced dims; d(mean): the same divided by the
// count; d(amax), d(amin): the gradient to the extremal elements, split evenly between ties.
struct ReduceDerivative {
  ReduceOp op;
  std::vector<int64_t> dims;
  Shape in_shape, kept_shape;
  double count;
  SavedTensor x, out;  // read by amax/amin
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor g = reshape(grad, kept_shape);
    if (op == ReduceOp::sum) return {expand(g, in_shape)};
    if (op == ReduceOp::mean)
      return {expand(div(g, scalar_tensor(count, g.dtype(), g.device())), in_shape)};
    Tensor hit = eq(x.get(), out.get()).to(g.dtype());
    Tensor ties = sum(hit, dims, true);
    return {mul(hit, div(g, ties))};
  }
};

Tensor reduce_values(ReduceOp op, const Tensor& x_in, const std::vector<int64_t>& dims_in,
                     bool keepdim) {
  const char* name = op == ReduceOp::sum    ? "sum"
                     : op == ReduceOp::mean ? "mean"
                     : op == ReduceOp::max  ? "amax"
                                            : "amin";
  check_defined(name, x_in, "input");
  std::vector<int64_t> dims = normalize_dims(x_in, dims_in, name);
  Tensor x = x_in;
  if (op == ReduceOp::sum && !is_floating(x.dtype())) x = x.to(DType::i64);
  if (op == ReduceOp::mean)
    RG_CHECK(is_floating(x.dtype()), "mean: needs a floating-point input, got ", x.dtype());
  if (op == ReduceOp::max || op == ReduceOp::min) {
    RG_CHECK(x.dtype() != DType::b8, name, ": not supported for bool tensors");
    for (int64_t d : dims)
      RG_CHECK(x.shape()[d] > 0, name, ": cannot reduce over dim ", d, " of size 0 (shape ",
               shape_str(x.shape()), ")");
  }
  Tensor out = reduce_raw(op, x, dims, x.dtype());
  Tensor result = keepdim ? out : drop_dims(out, dims);
  if (!needs_grad({x})) return result;

  record(name, result, {x},
         ReduceDerivative{op, dims, x.shape(), out.shape(), static_cast<double>(count_of(x, dims)),
                          SavedTensor(x, name), SavedTensor(out, name)});
  return result;
}

Tensor arg_reduce(ReduceOp op, const Tensor& x, int64_t dim, bool keepdim) {
  const char* name = op == ReduceOp::argmax ? "argmax" : "argmin";
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

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_values(ReduceOp::sum, autocast(AutocastOp::sum, x), dims, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_values(ReduceOp::mean, autocast(AutocastOp::mean, x), dims, keepdim);
}
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_values(ReduceOp::max, x, dims, keepdim);
}
Tensor amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_values(ReduceOp::min, x, dims, keepdim);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_reduce(ReduceOp::argmax, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_reduce(ReduceOp::argmin, x, dim, keepdim);
}
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
