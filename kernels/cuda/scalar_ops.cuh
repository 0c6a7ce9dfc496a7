// Scalar math for the fused kernels (softmax, cross_entropy, adamw, scale_multi): the float
// and double libm overloads of the op table's scalar functions (core/elementwise_scalar.h),
// under the names those kernels use, and a product rounded once. The elementwise ops
// themselves are the table's functors.
#pragma once
#include "core/elementwise_scalar.h"
#include "kernels/cuda/common.cuh"

namespace rg::RG_BACKEND {

template <typename F>
RG_HD inline F m_exp(F x) {
  return scalar::exp(x);
}
template <typename F>
RG_HD inline F m_log(F x) {
  return scalar::log(x);
}
template <typename F>
RG_HD inline F m_sqrt(F x) {
  return scalar::sqrt(x);
}

// a * b rounded once, never fused into a following add (the rounding of a mul_ kernel:
// __fmul_rn / __dmul_rn on the device; g++ in ISO mode contracts nothing, docs/sim.md).
template <typename F>
RG_HD inline F mul_rounded(F a, F b) {
#if RG_SIM || !defined(__CUDA_ARCH__)
  return a * b;
#else
  if constexpr (sizeof(F) == 4)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
#endif
}

}  // namespace rg::RG_BACKEND
