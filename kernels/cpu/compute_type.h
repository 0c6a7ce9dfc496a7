// The type a CPU kernel computes in for a storage type: bf16 is widened to float,
// everything else computes in itself.
#pragma once
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"

namespace rg::cpu {

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, bf16_t>, float, T>;

// Calls f.template operator()<T>() with T = float, double or bf16_t (the storage type;
// compute in compute_t<T>); other dtypes throw naming `op`.
template <typename F>
void dispatch_floating(DType dtype, const char* op, F f) {
  switch (dtype) {
    case DType::f32:
      return f.template operator()<float>();
    case DType::f64:
      return f.template operator()<double>();
    case DType::bf16:
      return f.template operator()<bf16_t>();
    default:
      RG_FAIL(op, ": unsupported dtype ", dtype);
  }
}

}  // namespace rg::cpu
