// Scalar math for the fused kernels (softmax, cross_entropy, adamw): the float and double
// libm overloads of the op table's scalar functions (core/elementwise_scalar.h), under the
// names those kernels use. The elementwise ops themselves are the table's functors.
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

}  // namespace rg::RG_BACKEND
