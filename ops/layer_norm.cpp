// layer_norm over the trailing `normalized_shape` dims: y = (x - mean) * rstd * w + b.
// The forward kernel saves mean and rstd per row; the backward kernel computes dx, dw, db
// in one pass over the rows (rows = all leading dims flattened).
#include "kernels/builtin.h"
#include "kernels/contracts.h"
#include "ops/autocast.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(layer_norm): dx, dweight, dbias of the [N, C] rows in one pass of the backward kernel,
// from x and the mean and rstd the forward saved.
struct LayerNormDerivative {
  SavedTensor x, weight;
  Tensor mean, rstd;
  int64_t rows, cols;
  bool has_weight, has_bias;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor xv = x.get(), wv = weight.get();
    Tensor dy = contiguous(reshape(grad, {rows, cols}));
    Tensor dx = empty({rows, cols}, xv.dtype(), xv.device());
    Tensor dw = has_weight ? empty({cols}, xv.dtype(), xv.device()) : Tensor();
    Tensor db = has_bias ? empty({cols}, xv.dtype(), xv.device()) : Tensor();
    if (has_weight && rows == 0) dw.zero_();
    if (has_bias && rows == 0) db.zero_();
    if (dx.numel()) RG_KERNEL(xv.device(), layernorm_backward)(dx, dw, db, dy, xv, mean, rstd, wv);
    return {dx, dw, db};
  }
};

}  // namespace

Tensor layer_norm(const Tensor& x_given, const Shape& normalized_shape, const Tensor& weight_in,
                  const Tensor& bias_in, double eps) {
  const Tensor x_in = autocast(AutocastOp::layer_norm, x_given);
  const Tensor weight = autocast(AutocastOp::layer_norm, weight_in);
  const Tensor bias = autocast(AutocastOp::layer_norm, bias_in);
  check_defined("layer_norm", x_in, "input");
  RG_CHECK(is_floating(x_in.dtype()), "layer_norm: expected a floating-point input, got ",
           x_in.dtype());
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
  DType stat_dtype = layernorm_stats_dtype(x.dtype());
  Tensor out = empty({N, C}, x.dtype(), x.device());
  Tensor mean = empty({N}, stat_dtype, x.device()), rstd = empty({N}, stat_dtype, x.device());
  Tensor w = weight.defined() ? contiguous(weight).reshape({C}) : Tensor();
  Tensor b = bias.defined() ? contiguous(bias).reshape({C}) : Tensor();
  if (out.numel()) {
    const Tensor wd = w.defined() ? w.detach() : w, bd = b.defined() ? b.detach() : b;
    RG_KERNEL(x.device(), layernorm)(out, mean, rstd, x.detach(), wd, bd, eps);
  }
  Tensor result = view(out, x_in.shape());
  if (needs_grad({x, w, b})) {
    record("layer_norm", out, {x, w, b},
           LayerNormDerivative{SavedTensor(x, "layer_norm"), SavedTensor(w, "layer_norm"), mean,
                               rstd, N, C, w.defined(), b.defined()});
    // `out` carries the node; `result` is its view, recorded through view().
    result = view(out, x_in.shape());
  }
  return result;
}

}  // namespace rg
