// TF32 rounding on the host: f32 with its mantissa cut to TF32's 10 bits, as tensor cores read
// f32 operands. sim's cuBLAS shim (kernels/sim/cublas_shim.cpp) and its warp mma
// (kernels/cuda/warp_mma.cuh) both round with it.
#pragma once
#include <cstdint>
#include <cstring>

namespace rg {

// x rounded to nearest, ties to even; inf and NaN as they are.
inline float round_to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf, NaN
  u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace rg
