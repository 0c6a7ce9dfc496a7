// The warp-level pieces of the tensor-core attention (kernels/cuda/attention_mma.cuh):
// staging 64-row tiles into shared memory by cp.async, S = A B^T and acc += P B over a
// warp's 16 rows by mma (warp_mma.cuh) with fragments from ldmatrix (ldmatrix.cuh), quad
// reductions over a row's lanes and the mask. Accumulator element (nt, r) of a lane is row
// c_row(lane, r) of the warp's 16, column nt * 8 + c_col(lane, r) of the tile.
// Tiles hold the inputs' own bytes (bf16, or f32: rounded to TF32 as fragments load), a
// row of kD values per key or query, laid out so that no fragment load has bank conflicts:
//   bf16: rows padded by one 16-byte chunk (stride kD + 8 values), fragments all by
//         ldmatrix (A and Q K^T's B plain, P V's B .trans): the 8 rows of a matrix start
//         16 bytes apart mod 128, on 8 distinct bank quads;
//     bank quad:  0  1  2  3  4  5  6  7
//     row 0:     c0 c1 c2 c3 c4 c5 c6 c7     (c = 16-byte chunk, 8 bf16)
//     row 1:     .. c0 c1 c2 c3 c4 c5 c6  c7 ..  (one chunk on)
//   TF32: .trans would split its 32-bit words, so its P V-style B fragments load value by
//         value (rows t and t + 4 of a step, 8 consecutive words each), which padding
//         cannot serve with ldmatrix's rows at once. Rows stay unpadded and chunk c of row
//         r lives at chunk c ^ f(r % 8), f(r) = 2 (r % 4) + r / 4 = 0 2 4 6 1 3 5 7:
//     logical chunk:  0  1  2  3  4  5  6  7
//     row 0 at:       0  1  2  3  4  5  6  7
//     row 1 at:       2  3  0  1  6  7  4  5
//     row 4 at:       1  0  3  2  5  4  7  6     ...
//         f is one-to-one over 8 rows (ldmatrix phases), and its high bits differ over any
//         4 rows (the value-by-value loads, and P's 8-byte scratch stores).
// Padding keeps every fragment address a constant offset from a lane's own (few registers);
// TF32's XORed ones would be hoisted and kept live, so accumulate_step recomputes them at
// each step (opaque) and its dkdv keeps P in the scratch tile: every kernel at D 64 and 128
// fits in 255 registers without spills (docs/kernels.md).
#pragma once
#include <cstring>
#include <limits>
#include <utility>

#include "kernels/cuda/ldmatrix.cuh"
#include "kernels/cuda/warp_mma.cuh"

namespace rg::RG_BACKEND {
namespace attention_mma {

constexpr int kRows = 16, kWarps = 4, kTile = kRows * kWarps, kTileN = kTile / 8;

// The warps' 16 x 64 scratch tiles (f32): TF32 only (see accumulate_product).
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

// Rows of kD values of In at `base` (a row index a multiple of 8 from the swizzle's own),
// swizzled as above.
template <typename In, int kD>
struct Tile {
  static constexpr int kPerChunk = 16 / int(sizeof(In)), kChunks = kD / kPerChunk;
  static constexpr bool kSwizzled = sizeof(In) == 4;  // else padded
  static constexpr int kStride = kSwizzled ? kD : kD + kPerChunk, kValues = kTile * kStride;
  static_assert(kChunks % 8 == 0, "rows of whole 128-byte lines");
  In* base;
  RG_HD static int swizzle(int row) { return kSwizzled ? (row % 4) * 2 + row % 8 / 4 : 0; }
  // The value offset of chunk (row, c).
  RG_HD static int offset(int row, int c) { return row * kStride + (c ^ swizzle(row)) * kPerChunk; }
  RG_HD In* chunk(int row, int c) const { return base + offset(row, c); }
  RG_HD In& at(int row, int col) const { return chunk(row, col / kPerChunk)[col % kPerChunk]; }
  // What ldmatrix takes for chunk (row, c): on a GPU its 32-bit shared-memory address.
#if RG_SIM
  const In* row_address(int row, int c) const { return chunk(row, c); }
#else
  __device__ unsigned row_address(int row, int c) const {
    return shared_address(base) + unsigned(offset(row, c)) * sizeof(In);
  }
#endif
  RG_HD Tile rows_from(int row) const { return {base + row * kStride}; }
};

// The block starts copying rows first .. first + kTile - 1 of a [count, kD] matrix into
// dst (zeros past `count`) by cp.async; the caller commits and waits.
template <int kD, typename In>
__device__ inline void stage_rows(Tile<In, kD> dst, const In* src, int64_t first, int64_t count) {
  constexpr int kChunks = Tile<In, kD>::kChunks;
  for (int e = int(threadIdx.x); e < kTile * kChunks; e += int(blockDim.x)) {
    const int row = e / kChunks, c = e % kChunks;
    const bool valid = first + row < count;
    const In* from = valid ? src + (first + row) * kD + c * Tile<In, kD>::kPerChunk : src;
    cp_async16(dst.chunk(row, c), from, valid);
  }
}

// TF32 fragments from shared memory hold f32 bits: round them as the mma expects.
template <typename M, int N>
__device__ inline void round_fragment(uint32_t (&f)[N]) {
  if constexpr (std::is_same_v<M, MmaTf32>)
    for (uint32_t& x : f) x = float_to_bits(to_tf32(bits_to_float(x)));
}

// The A fragment of rows 0..15 at `a`, k-step k0: ldmatrix's matrices are rows 0-7 and
// 8-15 of the step's two 16-byte chunks (M::K values of either type are 32 bytes).
template <typename M, int kD>
__device__ inline void load_a_tile(uint32_t (&fa)[4], Tile<typename M::In, kD> a, int k0,
                                   int lane) {
  const int c0 = k0 / Tile<typename M::In, kD>::kPerChunk, m = lane / 8;
  ldmatrix_x4<false>(fa, a.row_address(m % 2 * 8 + lane % 8, c0 + m / 2));
  round_fragment<M>(fa);
}

// s = A B^T: A the warp's 16 rows (kD wide), its fragment of k-step k0 from a_at(k0, fa); B
// 64 rows (kD wide). B's fragments of two 8-row tiles nt, nt + 1 come from one ldmatrix:
// (nt, chunk c0), (nt, c0 + 1), (nt + 1, c0)... kUnrolled: the k-steps as constants (A's
// fragments then stay in registers; TF32's swizzled addresses would not).
template <typename M, int kD, bool kUnrolled = false, typename A>
__device__ inline void scores_with(float (&s)[kTileN][4], A a_at, Tile<typename M::In, kD> b,
                                   int lane) {
  for (auto& t : s)
    for (float& x : t) x = 0.f;
  const int m = lane / 8;
  auto step = [&](int k0) {
    uint32_t fa[4];
    a_at(k0, fa);
    const int c0 = k0 / Tile<typename M::In, kD>::kPerChunk;
    for (int nt = 0; nt < kTileN; nt += 2) {
      uint32_t fb[4];
      ldmatrix_x4<false>(fb, b.row_address((nt + m / 2) * 8 + lane % 8, c0 + m % 2));
      round_fragment<M>(fb);
      const uint32_t b0[2] = {fb[0], fb[1]}, b1[2] = {fb[2], fb[3]};
      mma<M>(s[nt], fa, b0);
      mma<M>(s[nt + 1], fa, b1);
    }
  };
  if constexpr (kUnrolled) [&]<int... k>(std::integer_sequence<int, k...>) {
      (step(k * M::K), ...);
    }
  (std::make_integer_sequence<int, kD / M::K>());
  else for (int k0 = 0; k0 < kD; k0 += M::K) step(k0);
}

// scores_with A's fragments loaded from the tile a at each step.
template <typename M, int kD>
__device__ inline void scores(float (&s)[kTileN][4], Tile<typename M::In, kD> a,
                              Tile<typename M::In, kD> b, int lane) {
  scores_with<M, kD>(
      s, [&](int k0, uint32_t(&fa)[4]) { load_a_tile<M, kD>(fa, a, k0, lane); }, b, lane);
}

// The forward's Q fragments (the warp's 16 rows): bf16 loads every k-step's once and keeps
// them in registers (16 at D 64, 32 at D 128); TF32 (4 registers a step, and more pressure
// already) loads them from shared memory at each key tile.
template <typename M, int kD>
struct QueryFragments {
  static constexpr bool kKept = std::is_same_v<M, MmaBf16>;
  Tile<typename M::In, kD> rows;
  uint32_t f[kKept ? kD / M::K : 1][4];
  __device__ void load(int lane) {
    if constexpr (kKept)
      for (int k = 0; k < kD / M::K; ++k) load_a_tile<M, kD>(f[k], rows, k * M::K, lane);
  }
  // s = Q B^T
  __device__ void scores(float (&s)[kTileN][4], Tile<typename M::In, kD> b, int lane) const {
    if constexpr (kKept)
      scores_with<M, kD, true>(
          s, [&](int k0, uint32_t(&fa)[4]) { std::memcpy(fa, f[k0 / M::K], sizeof(fa)); }, b, lane);
    else
      attention_mma::scores<M, kD>(s, rows, b, lane);
  }
};

// x, opaque to the compiler: addresses derived from it are recomputed where used (a few
// integer ops) instead of being hoisted out of the loops and kept live in registers (the
// swizzled ones, one per chunk pattern, made TF32's dkdv at D 128 spill).
__device__ inline int opaque(int x) {
#if !RG_SIM
  asm volatile("" : "+r"(x));
#endif
  return x;
}

// B fragments of column tiles nt, nt + 1 of B = rows k0.. of b (kD wide, not transposed):
// bf16 by ldmatrix .trans of (rows k0.., chunk nt), (k0 + 8.., nt), (k0.., nt + 1), ...;
// TF32 (.trans would split its words) value by value.
template <typename M, int kD>
__device__ inline void load_b_pair(uint32_t (&b0)[2], uint32_t (&b1)[2], Tile<typename M::In, kD> b,
                                   int k0, int nt, int lane) {
  if constexpr (std::is_same_v<M, MmaBf16>) {
    const int m = lane / 8;
    uint32_t f[4];
    ldmatrix_x4<true>(f, b.row_address(k0 + m % 2 * 8 + lane % 8, nt + m / 2));
    b0[0] = f[0], b0[1] = f[1], b1[0] = f[2], b1[1] = f[3];
  } else {
    load_b<M>(
        b0, [&](int k, int n) { return M::from_float(b.at(k0 + k, nt * 8 + n)); }, lane);
    load_b<M>(
        b1, [&](int k, int n) { return M::from_float(b.at(k0 + k, nt * 8 + 8 + n)); }, lane);
  }
}

// acc += A B over 16 (bf16) or 8 (TF32) of the 64 rows of B (kD wide), from row k0.
template <typename M, int kD>
__device__ inline void accumulate_step(float (&acc)[kD / 8][4], const uint32_t (&fa)[4],
                                       Tile<typename M::In, kD> b, int k0, int lane) {
  lane = opaque(lane);  // this step's addresses from the lane, not kept over steps
  for (int nt = 0; nt < kD / 8; nt += 2) {
    uint32_t b0[2], b1[2];
    load_b_pair<M, kD>(b0, b1, b, k0, nt, lane);
    mma<M>(acc[nt], fa, b0);
    mma<M>(acc[nt + 1], fa, b1);
  }
}

// The address of a lane's two adjacent values (h = 0, 1: rows c_row(lane, 2h)) of column
// tile nt in the warp's 16 x 64 scratch tile (one 8-byte access, conflict-free).
__device__ inline float* scratch_pair(Tile<float, kTile> scratch, int nt, int h, int lane) {
  return &scratch.at(c_row(lane, 2 * h), nt * 8 + c_col(lane, 2 * h));
}

// Writes P into the warp's scratch tile as f32 (load_a_tile rounds it to TF32).
__device__ inline void store_scratch(Tile<float, kTile> scratch, const float (&p)[kTileN][4],
                                     int lane) {
  for (int nt = 0; nt < kTileN; ++nt)
    for (int h = 0; h < 2; ++h) {
      float* at = scratch_pair(scratch, nt, h, lane);
#if RG_SIM
      const uint64_t pair =
          uint64_t(float_to_bits(p[nt][2 * h + 1])) << 32 | float_to_bits(p[nt][2 * h]);
      *reinterpret_cast<volatile uint64_t*>(at) = pair;  // one 8-byte request, as on a GPU
#else
      *reinterpret_cast<float2*>(at) = make_float2(p[nt][2 * h], p[nt][2 * h + 1]);
#endif
    }
}

// The lane's own values of P back from the scratch tile (as store_scratch wrote them).
__device__ inline float scratch_value(Tile<float, kTile> scratch, int nt, int r, int lane) {
  const float* at = scratch_pair(scratch, nt, r / 2, lane);
#if RG_SIM
  const uint64_t pair = *reinterpret_cast<const volatile uint64_t*>(at);  // one 8-byte request
  return bits_to_float(uint32_t(pair >> (r % 2 * 32)));
#else
  const float2 pair = *reinterpret_cast<const float2*>(at);
  return r % 2 ? pair.y : pair.x;
#endif
}

// acc += P B, P (16 x 64) from the warp's scratch tile (TF32), B 64 rows (kD wide).
template <typename M, int kD>
__device__ inline void accumulate_scratch(float (&acc)[kD / 8][4], Tile<float, kTile> scratch,
                                          Tile<typename M::In, kD> b, int lane) {
  for (int k0 = 0; k0 < kTile; k0 += M::K) {
    uint32_t fa[4];
    load_a_tile<M, kTile>(fa, scratch, k0, lane);
    accumulate_step<M, kD>(acc, fa, b, k0, lane);
  }
}

// acc += P B, P (16 x 64) given as accumulators, B 64 rows (kD wide). bf16: a lane's
// accumulators are its A fragments (MmaBf16::c_tile, FlashAttention-2's register reuse);
// TF32's A layout differs, so there P goes through the warp's 16 x 64 scratch tile.
template <typename M, int kD>
__device__ inline void accumulate_product(float (&acc)[kD / 8][4], const float (&p)[kTileN][4],
                                          Tile<float, kTile> scratch, Tile<typename M::In, kD> b,
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
    store_scratch(scratch, p, lane);
    __syncwarp();
    accumulate_scratch<M, kD>(acc, scratch, b, lane);
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
