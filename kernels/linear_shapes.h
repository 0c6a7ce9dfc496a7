// The contract of the linear kernel (core/op_table.h), checked in debug builds by every
// backend's kernel (cpu and gpu): out [M,N] contiguous, x [M,K], weight [N,K], bias [N] or
// undefined.
#pragma once
#include "core/error.h"
#include "core/tensor.h"

namespace rg {

inline void debug_check_linear_shapes([[maybe_unused]] const Tensor& out,
                                      [[maybe_unused]] const Tensor& x,
                                      [[maybe_unused]] const Tensor& weight,
                                      [[maybe_unused]] const Tensor& bias) {
  RG_DEBUG_ASSERT(
      out.dim() == 2 && x.dim() == 2 && weight.dim() == 2 && out.is_contiguous() &&
          x.size(0) == out.size(0) && weight.size(0) == out.size(1) &&
          x.size(1) == weight.size(1) &&
          (!bias.defined() || (bias.dim() == 1 && bias.size(0) == out.size(1))),
      "linear: kernel expects out [M,N] contiguous, x [M,K], weight [N,K], bias [N]; got ",
      shape_str(out.shape()), ", ", shape_str(x.shape()), ", ", shape_str(weight.shape()));
}

}  // namespace rg
