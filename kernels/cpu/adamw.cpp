// CPU fused AdamW for one parameter (param, grad, exp_avg, exp_avg_sq contiguous, same
// dtype, f32 or f64). Same operation order as PyTorch's single-tensor (non-foreach) AdamW,
// with its scalars computed in double and rounded once to the tensor dtype:
//   p   = p * (1 - lr * wd)                            decoupled weight decay, first
//   m   = lerp(m, g, 1 - b1)                           PyTorch's lerp_ formula
//   v   = v * b2 + (1 - b2) * g * g
//   p   = p + (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc = 1 - b^step
#include <cmath>

#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/adamw_scalars.h"

namespace rg::cpu {
namespace {

template <typename T>
void adamw_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, const AdamWArgs& args) {
  T* p = param.data<T>();
  const T* g = grad.data<T>();
  T* m = exp_avg.data<T>();
  T* v = exp_avg_sq.data<T>();
  const AdamWScalars<T> s = adamw_scalars<T>(args);
  parallel_for(param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T pi = p[i] * s.decay;
      T gi = g[i];
      T mi = s.lerp_low ? m[i] + s.w1 * (gi - m[i]) : gi - (gi - m[i]) * (T(1) - s.w1);
      T vi = v[i] * s.b2 + s.w2 * gi * gi;
      T denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
      p[i] = pi + s.step_size * mi / denom;
      m[i] = mi;
      v[i] = vi;
    }
  });
}

void adamw(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
           const AdamWArgs& args) {
  for (const Tensor* t : {&grad, &exp_avg, &exp_avg_sq}) {
    RG_DEBUG_ASSERT(t->shape() == param.shape() && t->dtype() == param.dtype(), "adamw: state ",
                    shape_str(t->shape()), " ", t->dtype(), " does not match parameter ",
                    shape_str(param.shape()), " ", param.dtype());
    RG_DEBUG_ASSERT(t->is_contiguous(), "adamw: tensors must be contiguous");
  }
  RG_DEBUG_ASSERT(param.is_contiguous(), "adamw: parameter must be contiguous");
  RG_DEBUG_ASSERT(args.step >= 1, "adamw: step must be >= 1, got ", args.step);
  dispatch_dtype<DTypes::f32_f64>(param.dtype(), "adamw", [&]<typename T>(TypeTag<T>) {
    adamw_typed<T>(param, grad, exp_avg, exp_avg_sq, args);
  });
}

}  // namespace

void register_adamw_kernels(KernelTable& k) { k.adamw = adamw; }
}  // namespace rg::cpu
