// Fused AdamW for one parameter: param, grad, exp_avg, exp_avg_sq contiguous, same dtype
// (f32 or f64). The operation order of the cpu kernel (PyTorch's single-tensor AdamW), with
// the scalars computed in double on the host and rounded once to the tensor dtype:
//   p = p * (1 - lr*wd);  m = lerp(m, g, 1 - b1);  v = v*b2 + (1 - b2)*g*g
//   p = p + (-lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),   bc = 1 - b^step
// Launch: one thread per element, 256 per block, no sync.
#include <cmath>

#include "kernels/adamw_scalars.h"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T>
__global__ void adamw_kernel(T* p, const T* g, T* m, T* v, int64_t n, AdamWScalars<T> s) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T pi = p[i] * s.decay;
  T gi = g[i];
  T mi = s.lerp_low ? m[i] + s.w1 * (gi - m[i]) : gi - (gi - m[i]) * (T(1) - s.w1);
  T vi = v[i] * s.b2 + s.w2 * gi * gi;
  T denom = m_sqrt(vi) / s.bc2_sqrt + s.eps;
  p[i] = pi + s.step_size * mi / denom;
  m[i] = mi;
  v[i] = vi;
}

void run_adamw(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
               const Tensor& exp_avg_sq, const AdamWArgs& args) {
  for (const Tensor* t : {&grad, &exp_avg, &exp_avg_sq}) {
    RG_DEBUG_ASSERT(t->shape() == param.shape() && t->dtype() == param.dtype(), "adamw: state ",
                    shape_str(t->shape()), " ", t->dtype(), " does not match parameter ",
                    shape_str(param.shape()), " ", param.dtype());
    RG_DEBUG_ASSERT(t->is_contiguous(), "adamw: tensors must be contiguous");
  }
  RG_DEBUG_ASSERT(param.is_contiguous(), "adamw: parameter must be contiguous");
  RG_DEBUG_ASSERT(args.step >= 1, "adamw: step must be >= 1, got ", args.step);
  int64_t n = param.numel();
  if (n == 0) return;
  LaunchConfig cfg;
  cfg.name = "adamw";
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(n, 256)));
  cfg.block = dim3(256);
  cfg.stream = stream_for(param);
  cfg.uses_sync = false;
  dispatch_dtype<DTypes::f32_f64>(param.dtype(), "adamw", [&]<typename T>(TypeTag<T>) {
    const AdamWScalars<T> s = adamw_scalars<T>(args);
    launch(adamw_kernel<T>, cfg, static_cast<T*>(param.data_ptr()),
           static_cast<const T*>(grad.data_ptr()), static_cast<T*>(exp_avg.data_ptr()),
           static_cast<T*>(exp_avg_sq.data_ptr()), n, s);
  });
}

}  // namespace

void register_adamw_kernels(KernelTable& k) { k.adamw = run_adamw; }
}  // namespace rg::RG_BACKEND
