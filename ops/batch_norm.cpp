// F.batch_norm composed of reductions and elementwise ops. x is [N, C, *]; each channel c is
// normalized over every dim but 1:
//   training (or no running stats): y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c,
//     var_c the biased (population) variance of the batch; then, without autograd and in
//     place, running_mean = (1 - momentum) * running_mean + momentum * mean_c and
//     running_var = (1 - momentum) * running_var + momentum * var_c * n / (n - 1), the
//     unbiased variance, n the elements per channel (PyTorch's rule);
//   evaluation: the running statistics replace the batch's.
#include "autograd/grad_mode.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

void check_channel_vector(const Tensor& t, int64_t channels, const char* what) {
  if (!t.defined()) return;
  RG_CHECK(t.dim() == 1 && t.size(0) == channels, "batch_norm: ", what, " must have shape [",
           channels, "], got ", shape_str(t.shape()));
}

// t [C] viewed as [1, C, 1, ...] to broadcast against an input of `dims` dims.
Tensor per_channel(const Tensor& t, int64_t dims) {
  Shape shape(static_cast<size_t>(dims), 1);
  shape[1] = t.size(0);
  return reshape(t, shape);
}

void update_running_stats(const Tensor& running_mean, const Tensor& running_var,
                          const Tensor& batch_mean, const Tensor& batch_var, int64_t n,
                          double momentum) {
  NoGradGuard no_grad;
  if (running_mean.defined()) {
    running_mean.mul_(1 - momentum);
    running_mean.add_(batch_mean.detach().to(running_mean.dtype()), momentum);
  }
  if (running_var.defined()) {
    const double unbiased = static_cast<double>(n) / static_cast<double>(n - 1);
    running_var.mul_(1 - momentum);
    running_var.add_(batch_var.detach().to(running_var.dtype()), momentum * unbiased);
  }
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  check_defined("batch_norm", x, "input");
  RG_CHECK(x.dim() >= 2, "batch_norm: expected an input [N, C, *] of at least 2 dims, got shape ",
           shape_str(x.shape()));
  RG_CHECK(is_floating(x.dtype()), "batch_norm: expected a floating-point input, got ", x.dtype());
  const int64_t channels = x.size(1), n = x.numel() / std::max<int64_t>(1, channels);
  check_channel_vector(running_mean, channels, "running_mean");
  check_channel_vector(running_var, channels, "running_var");
  check_channel_vector(weight, channels, "weight");
  check_channel_vector(bias, channels, "bias");
  RG_CHECK(eps >= 0, "batch_norm: eps must be >= 0, got ", eps);
  RG_CHECK(!training || n > 1,
           "batch_norm: expected more than 1 value per channel when training, got input of shape ",
           shape_str(x.shape()));
  RG_CHECK(training || (running_mean.defined() && running_var.defined()),
           "batch_norm: evaluation needs running_mean and running_var");
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor mean_c, var_c;
  if (training) {
    mean_c = mean(x, dims);
    var_c = mean(square(sub(x, per_channel(mean_c, x.dim()))), dims);
    update_running_stats(running_mean, running_var, mean_c, var_c, n, momentum);
  } else {
    mean_c = running_mean.to(x.dtype());
    var_c = running_var.to(x.dtype());
  }
  Tensor inv_std = rsqrt(add(var_c, eps));
  Tensor y = mul(sub(x, per_channel(mean_c, x.dim())), per_channel(inv_std, x.dim()));
  if (weight.defined()) y = mul(y, per_channel(weight, x.dim()));
  if (bias.defined()) y = add(y, per_channel(bias, x.dim()));
  return y;
}

}  // namespace rg
