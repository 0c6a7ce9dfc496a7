// ringgrad's own f32 GEMM (single-threaded; the matmul kernel's tasks split the rows):
// c [m,n] (+)= a [m,k] @ b [k,n].
//
// Algorithm (the register-tile scheme of BLIS and llm.c's CPU matmul, written for this
// engine's shapes): b is packed, kKc rows at a time, into panels of kPanel columns, each panel
// kKc rows of kPanel contiguous floats, zero-padded on the right; packing reads b by its
// strides, so linear's weight^T needs no transposed copy beyond the pack. a is not packed: a
// register tile of kRows rows of c by one panel accumulates, for each p, the outer product of
// kRows scalars of a's column p (broadcast) and the panel's row p (vectors): kRows x J FMAs
// per kRows + J loads, the tile held in registers for the whole kKc rows. Row tiles go
// outermost, so a's kRows x kKc strip stays in L1 while the packed panels (at most kKc x kNc
// floats, 1 MiB) stream from L2.
// Columns past the last whole panel go through a zero-padded tile in memory.
//
// Numerics: each element is c's start (0 or its previous value) plus the products of p = 0,
// 1, ..., k-1 in that order, one FMA each (a multiply and an add in the portable loop), in f32 (a
// tile is stored and reloaded between kKc blocks exactly): no dependence on the blocking or on the
// row split.
//
// Micro-kernels (kernels/cpu/simd.h): AVX-512 (16 lanes, tile 6 x 64, 24 accumulators of 32
// registers) and AVX2 (8 lanes, tile 6 x 16, 12 accumulators of 16 registers); the baseline
// build runs the same loops on arrays, which the tests run but the matmul kernel does not
// (gemm_f32_tuned() false: Eigen stays faster there).
#include "kernels/cpu/gemm_f32.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/capability.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/transpose_f32.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int kRows = 6;       // rows of c in a register tile
constexpr int64_t kKc = 256;   // rows of b packed at a time (one panel: kKc x kPanel floats)
constexpr int64_t kNc = 1024;  // columns of b packed at a time: kKc x kNc floats = 1 MiB, in L2

#if RG_CPU_CAP_LEVEL > 0
// A tile of kRows x kPanel: 6 x 4 vectors (24 accumulators of AVX-512's 32 registers), or
// 6 x 2 (12 of AVX2's 16).
constexpr int kPanel = simd::kLanes == 16 ? 64 : 16;
constexpr bool kTuned = true;
#else
constexpr int kPanel = 16;
constexpr bool kTuned = false;
#endif
constexpr size_t kPanelAlignment = 64;
constexpr int64_t kTransposeRows = 16;  // rows of a panel packed at a time from a transposed b
static_assert(kPanel % 16 == 0, "panels hold whole 16 x 16 transposed blocks");

// Where a tile's accumulators start: `rows` (row i at rows + i * stride; stride 0: the same
// row, a bias), or zero when rows is null.
struct Start {
  const float* rows = nullptr;
  int64_t stride = 0;
  Start at(int64_t column) const { return {rows ? rows + column : nullptr, stride}; }
};

#if RG_CPU_CAP_LEVEL > 0
constexpr int kVecs = kPanel / simd::kLanes;

// c[R rows, kPanel] = start + a[R rows, kc] @ panel[kc, kPanel].
template <int R>
void tile(const float* a, int64_t lda, const float* panel, int64_t kc, float* c, int64_t ldc,
          Start start) {
  using namespace simd;
  constexpr int lanes = kLanes;
  F acc[R][kVecs];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < kVecs; ++j)
      acc[i][j] = start.rows ? load(start.rows + i * start.stride + j * lanes) : zero();
  for (int64_t p = 0; p < kc; ++p, panel += kPanel) {
    F bv[kVecs];
    for (int j = 0; j < kVecs; ++j) bv[j] = load_aligned(panel + j * lanes);
    for (int i = 0; i < R; ++i) {
      const F av = set1(a[i * lda + p]);
      for (int j = 0; j < kVecs; ++j) acc[i][j] = fmadd(av, bv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < kVecs; ++j) store(c + i * ldc + j * lanes, acc[i][j]);
}
#else
template <int R>
void tile(const float* a, int64_t lda, const float* panel, int64_t kc, float* c, int64_t ldc,
          Start start) {
  float acc[R][kPanel];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < kPanel; ++j)
      acc[i][j] = start.rows ? start.rows[i * start.stride + j] : 0.f;
  for (int64_t p = 0; p < kc; ++p, panel += kPanel)
    for (int i = 0; i < R; ++i) {
      const float av = a[i * lda + p];
      for (int j = 0; j < kPanel; ++j) acc[i][j] += av * panel[j];
    }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < kPanel; ++j) c[i * ldc + j] = acc[i][j];
}
#endif

void tile_rows(int rows, const float* a, int64_t lda, const float* panel, int64_t kc, float* c,
               int64_t ldc, Start start) {
  switch (rows) {
    case 6:
      return tile<6>(a, lda, panel, kc, c, ldc, start);
    case 5:
      return tile<5>(a, lda, panel, kc, c, ldc, start);
    case 4:
      return tile<4>(a, lda, panel, kc, c, ldc, start);
    case 3:
      return tile<3>(a, lda, panel, kc, c, ldc, start);
    case 2:
      return tile<2>(a, lda, panel, kc, c, ldc, start);
    default:
      return tile<1>(a, lda, panel, kc, c, ldc, start);
  }
}

// A tile whose panel is narrower than kPanel (the last columns): through a zero-padded copy.
void narrow_tile(int rows, int64_t width, const float* a, int64_t lda, const float* panel,
                 int64_t kc, float* c, int64_t ldc, Start start) {
  alignas(kPanelAlignment) float scratch[kRows][kPanel] = {};
  if (start.rows)
    for (int i = 0; i < rows; ++i)
      std::memcpy(scratch[i], start.rows + i * start.stride, width * sizeof(float));
  tile_rows(rows, a, lda, panel, kc, &scratch[0][0], kPanel,
            start.rows ? Start{&scratch[0][0], kPanel} : Start{});
  for (int i = 0; i < rows; ++i) std::memcpy(c + i * ldc, scratch[i], width * sizeof(float));
}

// One panel from a transposed view (b_row != 1 or b_col != 1): read along b's columns, write
// across the panel's rows, kTransposeRows rows at a time so that the rows written stay in L1;
// with vectors and b_row == 1, whole blocks of a vector's lanes squared in registers.
void pack_transposed_panel(const float* b, int64_t b_row, int64_t b_col, int64_t kc, int64_t width,
                           float* panel) {
  for (int64_t q = 0; q < kc; q += kTransposeRows) {
    const int64_t rows = std::min(kTransposeRows, kc - q);
    int64_t j = 0;
#if RG_CPU_CAP_LEVEL > 0
    constexpr int64_t L = simd::kLanes;
    if (b_row == 1 && rows == kTransposeRows)
      for (; j + L <= width; j += L)
        for (int64_t r = 0; r < kTransposeRows; r += L)
          transpose_block(b + j * b_col + q + r, b_col, panel + (q + r) * kPanel + j, kPanel);
#endif
    for (; j < width; ++j) {
      const float* column = b + j * b_col + q * b_row;
      for (int64_t p = 0; p < rows; ++p) panel[(q + p) * kPanel + j] = column[p * b_row];
    }
  }
}

// Rows [p0, p0 + kc) of b into panels of kPanel columns (kc x kPanel floats each, zero-padded).
void pack_b(const float* b, int64_t b_row, int64_t b_col, int64_t p0, int64_t kc, int64_t n,
            float* packed) {
  for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
    const int64_t width = std::min<int64_t>(kPanel, n - j0);
    float* panel = packed + j0 * kc;  // panel j0 / kPanel starts kc * kPanel floats after the last
    if (width < kPanel) std::fill(panel, panel + kc * kPanel, 0.f);
    if (b_col == 1) {
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(panel + p * kPanel, b + (p0 + p) * b_row + j0, width * sizeof(float));
    } else {
      pack_transposed_panel(b + j0 * b_col + p0 * b_row, b_row, b_col, kc, width, panel);
    }
  }
}

// The calling thread's packing buffer (kKc x n rounded up to panels), kept between calls so
// steady-state steps allocate nothing; aligned for the panels' aligned loads.
float* packing_buffer(int64_t n) {
  thread_local std::vector<float> buffer;
  const size_t floats = size_t(kKc) * ((n + kPanel - 1) / kPanel * kPanel);
  const size_t pad = kPanelAlignment / sizeof(float);
  if (buffer.size() < floats + pad) buffer.resize(floats + pad);
  const auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<float*>((address + kPanelAlignment - 1) & ~(kPanelAlignment - 1));
}

// c [m, n] = start + a [m, kc] @ the packed rows: row strips outermost, one tile per panel.
void multiply_packed(float* c, int64_t ldc, const float* a, int64_t lda, const float* packed,
                     int64_t m, int64_t kc, int64_t n, Start start) {
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int rows = int(std::min<int64_t>(kRows, m - i0));
    const Start strip{start.rows ? start.rows + i0 * start.stride : nullptr, start.stride};
    for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
      const float* panel = packed + j0 * kc;
      float* c_tile = c + i0 * ldc + j0;
      if (n - j0 >= kPanel)
        tile_rows(rows, a + i0 * lda, lda, panel, kc, c_tile, ldc, strip.at(j0));
      else
        narrow_tile(rows, n - j0, a + i0 * lda, lda, panel, kc, c_tile, ldc, strip.at(j0));
    }
  }
}

}  // namespace

bool gemm_f32_tuned() { return kTuned; }

void gemm_f32(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t b_row,
              int64_t b_col, int64_t m, int64_t k, int64_t n, bool accumulate, const float* bias) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m && !accumulate; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = bias ? bias[j] : 0.f;
    return;
  }
  const int64_t nc = std::min(n, kNc);
  float* packed = packing_buffer(nc);
  for (int64_t n0 = 0; n0 < n; n0 += kNc) {
    const int64_t width = std::min(kNc, n - n0);
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      const int64_t kc = std::min(kKc, k - p0);
      // The first block of rows starts from c (accumulate), the bias or zero; later ones from c.
      Start start{c + n0, ldc};
      if (p0 == 0 && !accumulate) start = bias ? Start{bias + n0, 0} : Start{};
      pack_b(b + n0 * b_col, b_row, b_col, p0, kc, width, packed);
      multiply_packed(c + n0, ldc, a + p0, lda, packed, m, kc, width, start);
    }
  }
}

}  // namespace rg::cpu::RG_CPU_CAP
