// The one dtype dispatch of ringgrad: every kernel, CPU or CUDA/sim, turns a runtime DType
// into a compile-time storage type here.
//
//   dispatch_dtype<DTypes::floating>(t.dtype(), "softmax", [&]<typename T>(TypeTag<T>) {
//     run<T>(...);  // T = float, double or bf16_t
//   });
//
// The set names the dtypes the kernel is written for; any other dtype throws rg::Error
// naming `op` (the op layer has already rejected it, so this is a last line of defence).
// Device code passes its own bf16 storage type as the second template argument
// (kernels/cuda/common.cuh: dispatch_dtype<DTypes::all, bf16>); the lambda is the same.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace rg {

template <typename T>
struct TypeTag {
  using type = T;
};

// The dtype sets kernels are written for.
enum class DTypes : uint8_t {
  f32_f64,   // float, double
  floating,  // float, double, bf16
  numeric,   // float, double, bf16, int32, int64
  all,       // float, double, bf16, int32, int64, bool
};

constexpr const char* dtypes_name(DTypes set) {
  return set == DTypes::f32_f64    ? "float32 or float64"
         : set == DTypes::floating ? "float32, float64 or bfloat16"
         : set == DTypes::numeric  ? "a numeric dtype (not bool)"
                                   : "any dtype";
}

// Calls fn(TypeTag<T>{}) with T the storage type of `dtype` and returns what it returns.
template <DTypes set, typename Bf16 = bf16_t, typename F>
decltype(auto) dispatch_dtype(DType dtype, const char* op, F&& fn) {
  constexpr bool with_bf16 = set != DTypes::f32_f64;
  constexpr bool with_integers = set == DTypes::numeric || set == DTypes::all;
  switch (dtype) {
    case DType::f32:
      return fn(TypeTag<float>{});
    case DType::f64:
      return fn(TypeTag<double>{});
    case DType::bf16:
      if constexpr (with_bf16) return fn(TypeTag<Bf16>{});
      break;
    case DType::i32:
      if constexpr (with_integers) return fn(TypeTag<int32_t>{});
      break;
    case DType::i64:
      if constexpr (with_integers) return fn(TypeTag<int64_t>{});
      break;
    case DType::b8:
      if constexpr (set == DTypes::all) return fn(TypeTag<bool>{});
      break;
  }
  RG_FAIL(op, ": unsupported dtype ", dtype_name(dtype), " (expected ", dtypes_name(set), ")");
}

}  // namespace rg
