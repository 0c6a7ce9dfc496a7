// Gradient-norm clipping (see nn/optim/clip_grad.h).
#include "nn/optim/clip_grad.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "ops/ops.h"

namespace rg::optim {

double grad_norm(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  double total = 0.0;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) total += sum(square(g.detach().to(DType::f64))).item();
  }
  return std::sqrt(total);
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  RG_CHECK(max_norm > 0, "clip_grad_norm_: max_norm must be positive, got ", max_norm);
  const double norm = grad_norm(params);
  const double scale = max_norm / (norm + 1e-6);
  if (scale < 1.0) {
    NoGradGuard no_grad;
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (g.defined()) g.detach().mul_(scale);
    }
  }
  return norm;
}

}  // namespace rg::optim
