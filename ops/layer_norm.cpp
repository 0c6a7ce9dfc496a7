// layer_norm over the trailing `normalized_shape` dims: y = (x - mean) * rstd * w + b.
// The forward kernel saves mean and rstd per row; the backward kernel computes dx, dw, db
// in one pass over the rows (rows = all leading dims flattened).
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

Tensor layer_norm(const Tensor& x_in, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  check_defined("layer_norm", x_in, "input");
  RG_CHECK(is_floating(x_in.dtype()), "layer_norm: expected a floating-point input, got ", x_in.dtype());
  int64_t nd = static_cast<int64_t>(normalized_shape.size());
  RG_CHECK(nd >= 1 && nd <= x_in.dim() &&
               Shape(x_in.shape().end() - nd, x_in.shape().end()) == normalized_shape,
           "layer_norm: normalized_shape ", shape_str(normalized_shape),
           " does not match the trailing dims of the input's shape ", shape_str(x_in.shape()));
  for (const Tensor* t : {&weight, &bias})
    if (t->defined()) {
      RG_CHECK(t->shape() == normalized_shape, "layer_norm: weight/bias of shape ",
               shape_str(t->shape()), " expected ", shape_str(normalized_shape));
      check_same_device("layer_norm", x_in, *t);
      RG_CHECK(t->dtype() == x_in.dtype(), "layer_norm: weight/bias dtype ", t->dtype(),
               " differs from the input's ", x_in.dtype());
    }
  int64_t C = numel_of(normalized_shape), N = C ? x_in.numel() / C : 0;
  Tensor x = reshape(contiguous(x_in), {N, C});
  DType stat_dtype = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor out = empty({N, C}, x.dtype(), x.device());
  Tensor mean = empty({N}, stat_dtype, x.device()), rstd = empty({N}, stat_dtype, x.device());
  Tensor w = weight.defined() ? contiguous(weight).reshape({C}) : Tensor();
  Tensor b = bias.defined() ? contiguous(bias).reshape({C}) : Tensor();
  if (out.numel())
    RG_KERNEL(x.device(), layernorm)(out, mean, rstd, x.detach(), w.defined() ? w.detach() : w,
                                     b.defined() ? b.detach() : b, eps);
  Tensor result = view(out, x_in.shape());
  if (needs_grad({x, w, b})) {
    SavedTensor sx(x, "layer_norm"), sw(w, "layer_norm");
    bool has_w = w.defined(), has_b = b.defined();
    Shape out_shape = x_in.shape();
    record("layer_norm", out, {x, w, b}, [=](const Tensor& g) {
      Tensor xv = sx.get(), wv = sw.get();
      Tensor dy = contiguous(reshape(g, {N, C}));
      Tensor dx = empty({N, C}, xv.dtype(), xv.device());
      Tensor dw = has_w ? empty({C}, xv.dtype(), xv.device()) : Tensor();
      Tensor db = has_b ? empty({C}, xv.dtype(), xv.device()) : Tensor();
      if (has_w && N == 0) dw.zero_();
      if (has_b && N == 0) db.zero_();
      if (dx.numel()) RG_KERNEL(xv.device(), layernorm_backward)(dx, dw, db, dy, xv, mean, rstd, wv);
      return std::vector{dx, dw, db};
    });
    // `out` carries the node; `result` is its view, recorded through view().
    result = view(out, out_shape);
  }
  return result;
}

}  // namespace rg
