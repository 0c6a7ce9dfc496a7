// Small f32 GEMM without packing (see small_gemm_f32.h): c (+)= alpha * op(a) @ b.
//
// Algorithm: register tiles of up to kRows rows of c by up to kVecs vectors of columns
// (kernels/cpu/simd.h: 4 of 16 floats with AVX-512, 2 of 8 with AVX2). For each p the tile loads
// its vectors of b's row p and broadcasts its kRows scalars of op(a)'s column p (a row-major slice
// or its transpose: only the scalars' strides differ), one FMA per vector and scalar; the tile
// stays in registers for the whole k, then is scaled by alpha and stored or added to c. Column
// blocks of a tile's width go outermost, so the block of b (k x 64 or k x 16 floats) stays in L1
// while every row tile reads it. Nothing is packed: the operands are tiles already in L1, where
// packing them cost as much as the product.
//
// Numerics: each element is the chain of its k products in order of p, one FMA each (a
// multiply and an add in the portable loop), in f32; then one multiply by alpha, and with
// `accumulate` one FMA into c's value.
#include "kernels/cpu/small_gemm_f32.h"

#include <algorithm>

#include "kernels/cpu/capability.h"
#include "kernels/cpu/simd.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int kRows = 6;  // rows of a register tile
#if RG_CPU_CAP_LEVEL > 0
constexpr int kLanes = simd::kLanes;
constexpr int kVecs = kLanes == 16 ? 4 : 2;  // vectors across a tile: 64 (AVX-512) or 16 columns
#else
constexpr int kLanes = 16;  // the plain loop's "vectors": arrays of 16
constexpr int kVecs = 4;
#endif

struct Operands {
  const float* a;
  int64_t a_row, a_col;
  const float* b;
  int64_t ldb, k;
  float* c;
  int64_t ldc;
  float alpha;
  bool accumulate;
};

#if RG_CPU_CAP_LEVEL > 0
constexpr bool kTuned = true;

// The R x J tile at row i0, column j0 of c.
template <int R, int J>
void tile(const Operands& o, int64_t i0, int64_t j0) {
  using namespace simd;
  F acc[R][J];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) acc[i][j] = zero();
  const float* a = o.a + i0 * o.a_row;
  const float* b = o.b + j0;
  for (int64_t p = 0; p < o.k; ++p, a += o.a_col, b += o.ldb) {
    F bv[J];
    for (int j = 0; j < J; ++j) bv[j] = load(b + j * kLanes);
    for (int i = 0; i < R; ++i) {
      const F av = set1(a[i * o.a_row]);
      for (int j = 0; j < J; ++j) acc[i][j] = fmadd(av, bv[j], acc[i][j]);
    }
  }
  const F alpha = set1(o.alpha);
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) {
      float* c = o.c + (i0 + i) * o.ldc + j0 + j * kLanes;
      store(c, o.accumulate ? fmadd(acc[i][j], alpha, load(c)) : mul(acc[i][j], alpha));
    }
}
#else
constexpr bool kTuned = false;

template <int R, int J>
void tile(const Operands& o, int64_t i0, int64_t j0) {
  float acc[R][J * kLanes] = {};
  const float* a = o.a + i0 * o.a_row;
  const float* b = o.b + j0;
  for (int64_t p = 0; p < o.k; ++p, a += o.a_col, b += o.ldb)
    for (int i = 0; i < R; ++i)
      for (int l = 0; l < J * kLanes; ++l) acc[i][l] += a[i * o.a_row] * b[l];
  for (int i = 0; i < R; ++i)
    for (int l = 0; l < J * kLanes; ++l) {
      float& c = o.c[(i0 + i) * o.ldc + j0 + l];
      c = o.accumulate ? c + acc[i][l] * o.alpha : acc[i][l] * o.alpha;
    }
}
#endif

template <int J>
void tile_of_rows(int rows, const Operands& o, int64_t i0, int64_t j0) {
  switch (rows) {
    case 6:
      return tile<6, J>(o, i0, j0);
    case 5:
      return tile<5, J>(o, i0, j0);
    case 4:
      return tile<4, J>(o, i0, j0);
    case 3:
      return tile<3, J>(o, i0, j0);
    case 2:
      return tile<2, J>(o, i0, j0);
    default:
      return tile<1, J>(o, i0, j0);
  }
}

void any_tile(int rows, int vecs, const Operands& o, int64_t i0, int64_t j0) {
  switch (vecs) {
    case 4:
      if constexpr (kVecs >= 4) return tile_of_rows<4>(rows, o, i0, j0);
      [[fallthrough]];
    case 3:
      if constexpr (kVecs >= 3) return tile_of_rows<3>(rows, o, i0, j0);
      [[fallthrough]];
    case 2:
      return tile_of_rows<2>(rows, o, i0, j0);
    default:
      return tile_of_rows<1>(rows, o, i0, j0);
  }
}

// Columns [j0, n) that are not whole vectors: one element at a time, the same chain.
void columns_left(const Operands& o, int64_t m, int64_t j0, int64_t n) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = j0; j < n; ++j) {
      float s = 0;
      for (int64_t p = 0; p < o.k; ++p) {
        const float product_a = o.a[i * o.a_row + p * o.a_col];
        s = kTuned ? __builtin_fmaf(product_a, o.b[p * o.ldb + j], s)
                   : s + product_a * o.b[p * o.ldb + j];
      }
      float& c = o.c[i * o.ldc + j];
      c = o.accumulate ? (kTuned ? __builtin_fmaf(s, o.alpha, c) : c + s * o.alpha) : s * o.alpha;
    }
}

}  // namespace

bool small_gemm_f32_fits(int64_t n) { return kTuned && n > 0 && n % kLanes == 0; }

void small_gemm_f32(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col,
                    const float* b, int64_t ldb, int64_t m, int64_t k, int64_t n, float alpha,
                    bool accumulate) {
  const Operands o{a, a_row, a_col, b, ldb, k, c, ldc, alpha, accumulate};
  const int64_t whole = n / kLanes * kLanes;
  for (int64_t j0 = 0; j0 < whole; j0 += kVecs * kLanes) {
    const int vecs = int(std::min<int64_t>(kVecs, (whole - j0) / kLanes));
    for (int64_t i0 = 0; i0 < m; i0 += kRows)
      any_tile(int(std::min<int64_t>(kRows, m - i0)), vecs, o, i0, j0);
  }
  if (whole < n) columns_left(o, m, whole, n);
}

}  // namespace rg::cpu::RG_CPU_CAP
