// The warp-level pieces of the tensor-core attention (kernels/cuda/attention_mma.cuh):
// staging 64-row tiles into shared memory as the mma input type, S = A B^T and acc += P B
// over a warp's 16 rows by mma (warp_mma.cuh), quad reductions over a row's lanes and
// the mask. Accumulator element (nt, r) of a lane is row c_row(lane, r) of the warp's 16,
// column nt * 8 + c_col(lane, r) of the tile.
#pragma once
#include <limits>

#include "kernels/cuda/warp_mma.cuh"

namespace rg::RG_BACKEND {
namespace attention_mma {

constexpr int kRows = 16, kWarps = 4, kTile = kRows * kWarps, kTileN = kTile / 8;

// The warps' 16 x 64 scratch tiles (values of the input type): TF32 only (see
// accumulate_product).
template <typename M>
constexpr int scratch_values() {
  return std::is_same_v<M, MmaBf16> ? 0 : kWarps * kRows * kTile;
}

struct Geometry {
  int64_t B, T, S;
  bool causal;
  float scale;
};

__device__ inline int64_t blocks_per_batch(int64_t rows) { return (rows + kTile - 1) / kTile; }
__device__ inline float neg_inf() { return -std::numeric_limits<float>::infinity(); }

// The block copies rows first .. first + kTile - 1 of a [count, kD] matrix into dst as the
// mma input type, zeros past `count`.
template <typename M, int kD, typename T>
__device__ inline void stage_rows(typename M::In* dst, const T* src, int64_t first, int64_t count) {
  for (int e = int(threadIdx.x); e < kTile * kD; e += int(blockDim.x)) {
    const int64_t row = first + e / kD;
    dst[e] = M::from_float(row < count ? convert<float>(src[row * kD + e % kD]) : 0.f);
  }
}

// s = A B^T: A the warp's 16 rows (kD wide) at a, B 64 rows (kD wide) at b.
template <typename M, int kD>
__device__ inline void scores(float (&s)[kTileN][4], const typename M::In* a,
                              const typename M::In* b, int lane) {
  for (auto& t : s)
    for (float& x : t) x = 0.f;
  for (int k0 = 0; k0 < kD; k0 += M::K) {
    uint32_t fa[4] = {};
    load_a<M>(
        fa, [&](int r, int k) { return a[r * kD + k0 + k]; }, lane);
    for (int nt = 0; nt < kTileN; ++nt) {
      uint32_t fb[2] = {};
      load_b<M>(
          fb, [&](int k, int n) { return b[(nt * 8 + n) * kD + k0 + k]; }, lane);
      mma<M>(s[nt], fa, fb);
    }
  }
}

// acc += A B over 16 (bf16) or 8 (TF32) of the 64 rows of B (kD wide) at b, from row k0.
template <typename M, int kD>
__device__ inline void accumulate_step(float (&acc)[kD / 8][4], const uint32_t (&fa)[4],
                                       const typename M::In* b, int k0, int lane) {
  for (int nt = 0; nt < kD / 8; ++nt) {
    uint32_t fb[2] = {};
    load_b<M>(
        fb, [&](int k, int n) { return b[(k0 + k) * kD + nt * 8 + n]; }, lane);
    mma<M>(acc[nt], fa, fb);
  }
}

// acc += P B, P (16 x 64) given as accumulators, B 64 rows (kD wide) at b. bf16: a lane's
// accumulators are its A fragments (MmaBf16::c_tile, FlashAttention-2's register reuse);
// TF32's A layout differs, so there P goes through the warp's 16 x 64 scratch tile.
template <typename M, int kD>
__device__ inline void accumulate_product(float (&acc)[kD / 8][4], const float (&p)[kTileN][4],
                                          typename M::In* scratch, const typename M::In* b,
                                          int lane) {
  if constexpr (std::is_same_v<M, MmaBf16>) {
    // constant indices keep p in registers
    RG_UNROLL
    for (int k0 = 0; k0 < kTile; k0 += M::K) {
      uint32_t fa[4] = {};
      RG_UNROLL
      for (int i = 0; i < M::kA; ++i)
        M::pack(fa, i, M::from_float(p[k0 / 8 + M::c_tile(i)][M::c_element(i)]));
      accumulate_step<M, kD>(acc, fa, b, k0, lane);
    }
  } else {
    __syncwarp();  // the scratch tile's last reads are done
    for (int nt = 0; nt < kTileN; ++nt)
      for (int r = 0; r < 4; ++r)
        scratch[c_row(lane, r) * kTile + nt * 8 + c_col(lane, r)] = M::from_float(p[nt][r]);
    __syncwarp();
    for (int k0 = 0; k0 < kTile; k0 += M::K) {
      uint32_t fa[4] = {};
      load_a<M>(
          fa, [&](int r, int k) { return scratch[r * kTile + k0 + k]; }, lane);
      accumulate_step<M, kD>(acc, fa, b, k0, lane);
    }
  }
}

// Max over the 4 lanes of a quad (the lanes holding one row's values).
__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Does query i see key j?
__device__ inline bool sees(const Geometry& g, int64_t i, int64_t j) {
  return i < g.T && j < g.S && !(g.causal && j > i);
}

// The last key (exclusive) any of the query rows first .. first + kTile - 1 sees.
__device__ inline int64_t keys_for(const Geometry& g, int64_t first) {
  const int64_t last = (first + kTile < g.T ? first + kTile : g.T) - 1;
  return g.causal && last + 1 < g.S ? last + 1 : g.S;
}

}  // namespace attention_mma
}  // namespace rg::RG_BACKEND
