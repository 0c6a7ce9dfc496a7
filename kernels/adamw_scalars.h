// AdamW's per-step scalars, computed on the host in double and rounded once to the tensor
// dtype, for every AdamW kernel (cpu and gpu, one tensor or many), so that they all give
// the same bits (PyTorch's single-tensor AdamW order):
//   p = p * decay;  m = lerp(m, g, w1);  v = v * b2 + w2 * g * g
//   p = p + step_size * m / (sqrt(v) / bc2_sqrt + eps)
// with decay = 1 - lr*wd, w1 = 1 - b1, w2 = 1 - b2, step_size = -lr / (1 - b1^step),
// bc2_sqrt = sqrt(1 - b2^step). lerp_low picks lerp's formula as PyTorch does (w1 < 0.5).
// grad_scale (clipping folded in) multiplies each gradient element first when `scaled`.
#pragma once
#include <cmath>

#include "core/op_table.h"

namespace rg {

template <typename T>
struct AdamWScalars {
  T decay, w1, b2, w2, step_size, bc2_sqrt, eps, grad_scale;
  bool lerp_low, scaled;
};

template <typename T>
AdamWScalars<T> adamw_scalars(const AdamWArgs& args, double grad_scale = 1.0) {
  const double bc1 = 1.0 - std::pow(args.beta1, static_cast<double>(args.step));
  const double bc2 = 1.0 - std::pow(args.beta2, static_cast<double>(args.step));
  return {T(1.0 - args.lr * args.weight_decay),
          T(1.0 - args.beta1),
          T(args.beta2),
          T(1.0 - args.beta2),
          T(-(args.lr / bc1)),
          T(std::sqrt(bc2)),
          T(args.eps),
          T(grad_scale),
          T(1.0 - args.beta1) < T(0.5),
          grad_scale != 1.0};
}

}  // namespace rg
