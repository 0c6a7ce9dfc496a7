// Warp and block all-reductions used by attention and the row kernels (row_group.cuh).
// warp_allreduce: butterfly of __shfl_xor_sync over the 32 lanes (every lane gets the
//   result). A struct value (row_stats.cuh) is shuffled and stored to shared memory field by
//   field, by its members shuffle_xor(mask) and store_to(dst) (a whole-struct copy may be a
//   memcpy, whose stores sim-check does not see: initcheck would flag the reads). block_allreduce:
//   each warp reduces, lane 0 of each warp parks its value in `scratch` (>= 32 entries of shared
//   memory), warp 0 reduces those, and the result is broadcast through scratch[0]. blockDim.x must
//   be a multiple of 32; every thread of the block must call it (it contains barriers). The
//   reduction order is fixed by the launch shape, so results are deterministic.
#pragma once
#include "kernels/cuda/common.cuh"

namespace rg::RG_BACKEND {

struct SumOp {
  template <typename T>
  RG_HD T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {  // NaN wins, like the cpu kernels
  template <typename T>
  RG_HD T operator()(T a, T b) const {
    return a != a ? a : (b != b ? b : (a < b ? b : a));
  }
};

template <typename T>
__device__ inline T shuffle_xor(T v, int mask) {
  if constexpr (std::is_arithmetic_v<T>)
    return __shfl_xor_sync(0xffffffffu, v, mask);
  else
    return v.shuffle_xor(mask);
}

template <typename T>
__device__ inline void store_shared(T& dst, const T& v) {
  if constexpr (std::is_arithmetic_v<T>)
    dst = v;
  else
    v.store_to(dst);
}

template <typename T, typename Op>
__device__ inline T warp_allreduce(T v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, shuffle_xor(v, offset));
  return v;
}

template <typename T, typename Op>
__device__ inline T block_allreduce(T v, Op op, T identity, T* scratch) {
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_allreduce(v, op);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) store_shared(scratch[warp], v);
  __syncthreads();
  if (warp == 0) {
    v = warp_allreduce(lane < warps ? scratch[lane] : identity, op);
    if (lane == 0) store_shared(scratch[0], v);
  }
  __syncthreads();
  return scratch[0];
}

}  // namespace rg::RG_BACKEND
