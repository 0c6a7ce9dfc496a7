// View ops: new shape/strides/offset over the same storage, no copy. Their derivatives
// undo the view on the gradient (reshape back, inverse permutation, sum over expanded
// dims, scatter into zeros for slices).
#include <algorithm>
#include <numeric>
#include <optional>

#include "core/shape_checks.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

Shape infer_shape(const Shape& shape, int64_t numel, const char* op, const Shape& from) {
  Shape out = shape;
  const int64_t known = checked_numel(shape, op, /*one_inferred=*/true);
  const auto minus_one = std::find(out.begin(), out.end(), -1);
  const int64_t infer_at = minus_one == out.end() ? -1 : minus_one - out.begin();
  if (infer_at >= 0) {
    RG_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(shape),
             " is invalid for input of shape ", shape_str(from));
    out[infer_at] = numel / known;
  }
  RG_CHECK(numel_of(out) == numel, op, ": shape ", shape_str(shape),
           " is invalid for input of shape ", shape_str(from), " (", numel, " elements)");
  return out;
}

// Strides for viewing (shape, strides) as new_shape without copying, if possible: each
// run of old dims that is contiguous in memory may be split or merged freely.
std::optional<Strides> view_strides(const Shape& shape, const Strides& strides,
                                    const Shape& new_shape) {
  Strides out(new_shape.size());
  if (numel_of(shape) == 0 || shape.empty()) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_stride = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    bool chunk_ends =
        d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= new_shape[view_d];
      view_d--;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// d(view), d(squeeze), d(unsqueeze): the gradient reshaped back to the input's shape.
struct ReshapeDerivative {
  Shape in_shape;
  std::vector<Tensor> operator()(const Tensor& grad) const { return {reshape(grad, in_shape)}; }
};

// d(permute): the gradient permuted back by the inverse permutation.
struct PermuteDerivative {
  std::vector<int64_t> inverse;
  std::vector<Tensor> operator()(const Tensor& grad) const { return {permute(grad, inverse)}; }
};

// d(slice): the gradient written into the slice of a zero tensor of the input's shape.
struct SliceDerivative {
  Shape in_shape;
  int64_t dim, start, end, step;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor z = zeros(in_shape, grad.dtype(), grad.device());
    slice(z, dim, start, end, step).copy_(grad);
    return {z};
  }
};

// d(expand): the gradient summed over the expanded dims.
struct ExpandDerivative {
  Shape in_shape;
  std::vector<Tensor> operator()(const Tensor& grad) const { return {sum_to(grad, in_shape)}; }
};

}  // namespace

Tensor view(const Tensor& x, const Shape& shape) {
  Shape target = infer_shape(shape, x.numel(), "view", x.shape());
  auto strides = view_strides(x.shape(), x.strides(), target);
  RG_CHECK(strides.has_value(), "view: shape ", shape_str(target),
           " is not compatible with the "
           "input's shape ",
           shape_str(x.shape()), " and strides ", shape_str(x.strides()),
           " (use reshape, which copies when needed)");
  Tensor out = make_view(x, target, *strides, x.offset());
  if (needs_grad({x})) record("view", out, {x}, ReshapeDerivative{x.shape()});
  return out;
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape target = infer_shape(shape, x.numel(), "reshape", x.shape());
  if (view_strides(x.shape(), x.strides(), target)) return view(x, target);
  return view(contiguous(x), target);
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = x.dim();
  RG_CHECK(static_cast<int64_t>(dims.size()) == n, "permute: got ", dims.size(),
           " dims for a tensor of ", n, " dims (shape ", shape_str(x.shape()), ")");
  Shape shape(n);
  Strides strides(n);
  std::vector<int64_t> inverse(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    RG_CHECK(inverse[d] < 0, "permute: dim ", d, " repeated in ", shape_str(dims));
    inverse[d] = i;
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  Tensor out = make_view(x, shape, strides, x.offset());
  if (needs_grad({x})) record("permute", out, {x}, PermuteDerivative{inverse});
  return out;
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  int64_t n = x.dim();
  if (n == 0) return x;
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  std::vector<int64_t> dims(n);
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[d0], dims[d1]);
  return permute(x, dims);
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  RG_CHECK(x.dim() > 0, "slice: cannot slice a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "slice");
  RG_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t size = x.shape()[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  Tensor out = make_view(x, shape, strides, x.offset() + start * x.strides()[dim]);
  if (needs_grad({x})) record("slice", out, {x}, SliceDerivative{x.shape(), dim, start, end, step});
  return out;
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  RG_CHECK(x.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  int64_t d = wrap_dim(dim, x.dim(), "narrow");
  int64_t size = x.shape()[d];
  if (start < 0) start += size;
  RG_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow: start ", start,
           " + length ", length, " out of range for dim ", d, " of size ", size, " (shape ",
           shape_str(x.shape()), ")");
  return slice(x, d, start, start + length);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  RG_CHECK(x.dim() > 0, "select: cannot select from a 0-d tensor");
  int64_t d = wrap_dim(dim, x.dim(), "select");
  int64_t size = x.shape()[d];
  RG_CHECK(index >= -size && index < size, "select: index ", index, " out of range for dim ", d,
           " of size ", size, " (shape ", shape_str(x.shape()), ")");
  if (index < 0) index += size;
  return squeeze(narrow(x, d, index, 1), d);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  int64_t n = static_cast<int64_t>(shape.size());
  RG_CHECK(n >= x.dim(), "expand: target shape ", shape_str(shape),
           " has fewer dims than the "
           "input's shape ",
           shape_str(x.shape()));
  Shape out_shape(n);
  Strides strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t j = i - (n - x.dim());
    int64_t size = j >= 0 ? x.shape()[j] : 1;
    int64_t target = shape[i] == -1 ? size : shape[i];
    RG_CHECK(shape[i] >= -1, "expand: invalid size ", shape[i], " in shape ", shape_str(shape));
    RG_CHECK(j >= 0 || shape[i] != -1, "expand: -1 not allowed for the new leading dim ", i);
    RG_CHECK(size == target || size == 1, "expand: the input's shape ", shape_str(x.shape()),
             " cannot be expanded to ", shape_str(shape), " (dim ", i, ": ", size, " vs ", target,
             ")");
    out_shape[i] = target;
    strides[i] = (j >= 0 && size == target) ? x.strides()[j] : 0;
  }
  if (out_shape == x.shape()) return x;
  checked_numel(out_shape, "expand");
  Tensor out = make_view(x, out_shape, strides, x.offset());
  if (needs_grad({x})) record("expand", out, {x}, ExpandDerivative{x.shape()});
  return out;
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  if (x.dim() == 0) return x;
  int64_t d = wrap_dim(dim, x.dim(), "squeeze");
  if (x.shape()[d] != 1) return x;
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor out = make_view(x, shape, strides, x.offset());
  if (needs_grad({x})) record("squeeze", out, {x}, ReshapeDerivative{x.shape()});
  return out;
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x.dim() + 1, "unsqueeze");
  Shape shape = x.shape();
  Strides strides = x.strides();
  int64_t stride = d < x.dim() ? shape[d] * strides[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  Tensor out = make_view(x, shape, strides, x.offset());
  if (needs_grad({x})) record("unsqueeze", out, {x}, ReshapeDerivative{x.shape()});
  return out;
}

Tensor Tensor::view(const Shape& shape) const { return rg::view(*this, shape); }
Tensor Tensor::reshape(const Shape& shape) const { return rg::reshape(*this, shape); }
Tensor Tensor::permute(const std::vector<int64_t>& dims) const { return rg::permute(*this, dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return rg::transpose(*this, d0, d1); }
Tensor Tensor::t() const {
  RG_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dims, got shape ", shape_str(shape()));
  return dim() < 2 ? *this : rg::transpose(*this, 0, 1);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return rg::narrow(*this, d, start, length);
}
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  return rg::slice(*this, d, start, end, step);
}
Tensor Tensor::select(int64_t d, int64_t index) const { return rg::select(*this, d, index); }
Tensor Tensor::expand(const Shape& shape) const { return rg::expand(*this, shape); }
Tensor Tensor::squeeze(int64_t d) const { return rg::squeeze(*this, d); }
Tensor Tensor::squeeze() const {
  Tensor out = *this;
  for (int64_t d = dim() - 1; d >= 0; --d) out = rg::squeeze(out, d);
  return out;
}
Tensor Tensor::unsqueeze(int64_t d) const { return rg::unsqueeze(*this, d); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  RG_CHECK(s <= e, "flatten: start_dim ", s, " > end_dim ", e);
  Shape shape(this->shape().begin(), this->shape().begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= this->shape()[d];
  shape.push_back(merged);
  shape.insert(shape.end(), this->shape().begin() + e + 1, this->shape().end());
  return reshape(shape);
}

}  // namespace rg
