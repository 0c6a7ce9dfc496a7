// CPU weight gradient of linear over sequences: dweight [N,K] = sum over b of dy[b]^T @ x[b],
// dy [B,T,N] and x [B,T,K] contiguous (f32 and f64).
//
// Numerics (those of the composition it replaces, matmul per sequence then sum over b in
// double): each sequence's product P_b = dy[b]^T x[b] is summed over its T rows in the
// compute type, and the P_b are summed in double, in b order, then rounded once. A batch
// split into micro-batches thus makes the same per-sequence products as the whole batch, which
// keeps f32 gradient accumulation within 1e-5 of one batch (a single GEMM over all B*T rows
// rounds differently: 2e-5, docs/performance.md).
//
// f32 algorithm: dy^T's rows are dy's columns, so neither operand needs packing. A register
// tile of R rows of dweight (n0..n0+R) by 16 J columns (k0..) accumulates, for each t, the
// outer product of dy[b,t,n0..n0+R) (broadcast scalars) and x[b,t,k0..) (vectors): R x J
// FMAs per R + J loads. After the T rows of a sequence the tile is added into a double copy
// of it (kept in L1), and after the last sequence rounded to dweight. Tiles are independent:
// parallel_for over row blocks, each sequence order fixed, so the result does not depend on
// the thread count. AVX-512 builds use 16-lane intrinsics; other builds the same loop on
// 16-float arrays (the compiler vectorises what the target has). Edges narrower than a tile
// take the scalar loop. f64: Eigen's product per sequence, accumulated into the double result.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"      // inside Eigen 3.4's AVX bf16 code
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on Eigen's AVX-512 packing
#include <Eigen/Core>
#pragma GCC diagnostic pop
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/cpu/eigen_threads.h"

namespace rg::cpu {
namespace {

constexpr int kRows = 6;  // R: rows of a register tile
constexpr int kVecs = 4;  // J: 16-float vectors across a tile (64 columns)
constexpr int kLanes = 16;

struct Operands {
  const float* dy;  // [B,T,N]
  const float* x;   // [B,T,K]
  int64_t B, T, N, K;
};

#if defined(__AVX512F__)
// Adds the R x J tile of sequence b's product at (n0, k0) into acc (row stride kVecs*16).
template <int R, int J>
void tile_product(const Operands& o, int64_t b, int64_t n0, int64_t k0, double* acc) {
  __m512 c[R][J];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) c[i][j] = _mm512_setzero_ps();
  const float* dy = o.dy + b * o.T * o.N + n0;
  const float* x = o.x + b * o.T * o.K + k0;
  for (int64_t t = 0; t < o.T; ++t, dy += o.N, x += o.K) {
    __m512 xv[J];
    for (int j = 0; j < J; ++j) xv[j] = _mm512_loadu_ps(x + j * kLanes);
    for (int i = 0; i < R; ++i) {
      const __m512 a = _mm512_set1_ps(dy[i]);
      for (int j = 0; j < J; ++j) c[i][j] = _mm512_fmadd_ps(a, xv[j], c[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) {
      double* d = acc + i * kVecs * kLanes + j * kLanes;
      const __m512 v = c[i][j];
      const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
      const __m512d hi =
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
      _mm512_storeu_pd(d, _mm512_add_pd(_mm512_loadu_pd(d), lo));
      _mm512_storeu_pd(d + 8, _mm512_add_pd(_mm512_loadu_pd(d + 8), hi));
    }
}
#else
template <int R, int J>
void tile_product(const Operands& o, int64_t b, int64_t n0, int64_t k0, double* acc) {
  float c[R][J * kLanes] = {};
  const float* dy = o.dy + b * o.T * o.N + n0;
  const float* x = o.x + b * o.T * o.K + k0;
  for (int64_t t = 0; t < o.T; ++t, dy += o.N, x += o.K)
    for (int i = 0; i < R; ++i)
      for (int l = 0; l < J * kLanes; ++l) c[i][l] += dy[i] * x[l];
  for (int i = 0; i < R; ++i)
    for (int l = 0; l < J * kLanes; ++l) acc[i * kVecs * kLanes + l] += double(c[i][l]);
}
#endif

// One row block [n0, n0 + R) x column block [k0, k0 + J*16) over every sequence, written to out.
template <int R, int J>
void tile(const Operands& o, int64_t n0, int64_t k0, float* out) {
  double acc[kRows * kVecs * kLanes] = {};
  for (int64_t b = 0; b < o.B; ++b) tile_product<R, J>(o, b, n0, k0, acc);
  for (int i = 0; i < R; ++i)
    for (int l = 0; l < J * kLanes; ++l)
      out[(n0 + i) * o.K + k0 + l] = float(acc[i * kVecs * kLanes + l]);
}

// Element (n, k) alone: the edges no tile covers.
void element(const Operands& o, int64_t n, int64_t k, float* out) {
  double total = 0;
  for (int64_t b = 0; b < o.B; ++b) {
    float s = 0;
    for (int64_t t = 0; t < o.T; ++t)
      s += o.dy[(b * o.T + t) * o.N + n] * o.x[(b * o.T + t) * o.K + k];
    total += double(s);
  }
  out[n * o.K + k] = float(total);
}

// Rows [n0, n0 + R): full-width column blocks, a narrower one of whole vectors, then the
// remaining columns one by one.
template <int R>
void row_block(const Operands& o, int64_t n0, float* out) {
  int64_t k0 = 0;
  for (; k0 + kVecs * kLanes <= o.K; k0 += kVecs * kLanes) tile<R, kVecs>(o, n0, k0, out);
  switch ((o.K - k0) / kLanes) {
    case 3:
      tile<R, 3>(o, n0, k0, out);
      break;
    case 2:
      tile<R, 2>(o, n0, k0, out);
      break;
    case 1:
      tile<R, 1>(o, n0, k0, out);
      break;
    default:
      break;
  }
  for (k0 += (o.K - k0) / kLanes * kLanes; k0 < o.K; ++k0)
    for (int i = 0; i < R; ++i) element(o, n0 + i, k0, out);
}

void weight_grad_f32(const Operands& o, float* out) {
  const int64_t blocks = (o.N + kRows - 1) / kRows;
  const int64_t work_per_block = kRows * o.K * o.B * o.T;
  parallel_for(blocks,
               std::max<int64_t>(1, (int64_t(1) << 20) / std::max<int64_t>(work_per_block, 1)),
               [&](int64_t first, int64_t last) {
                 for (int64_t blk = first; blk < last; ++blk) {
                   const int64_t n0 = blk * kRows;
                   switch (std::min<int64_t>(kRows, o.N - n0)) {
                     case 6:
                       row_block<6>(o, n0, out);
                       break;
                     case 5:
                       row_block<5>(o, n0, out);
                       break;
                     case 4:
                       row_block<4>(o, n0, out);
                       break;
                     case 3:
                       row_block<3>(o, n0, out);
                       break;
                     case 2:
                       row_block<2>(o, n0, out);
                       break;
                     default:
                       row_block<1>(o, n0, out);
                       break;
                   }
                 }
               });
}

// f64: dweight = sum_b dy[b]^T x[b] by Eigen, accumulated in place (double throughout).
void weight_grad_f64(const double* dy, const double* x, int64_t B, int64_t T, int64_t N, int64_t K,
                     double* out) {
  using Rows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  EigenSingleThread single;
  Eigen::Map<Rows> result(out, N, K);
  result.setZero();
  for (int64_t b = 0; b < B; ++b)
    result.noalias() += Eigen::Map<const Rows>(dy + b * T * N, T, N).transpose() *
                        Eigen::Map<const Rows>(x + b * T * K, T, K);
}

void linear_weight_grad(const Tensor& dweight, const Tensor& dy, const Tensor& x) {
  const int64_t B = dy.size(0), T = dy.size(1), N = dy.size(2), K = x.size(2);
  if (dy.dtype() == DType::f64)
    return weight_grad_f64(dy.data<double>(), x.data<double>(), B, T, N, K, dweight.data<double>());
  RG_CHECK(dy.dtype() == DType::f32, "linear_weight_grad: unsupported dtype ", dy.dtype());
  weight_grad_f32({dy.data<float>(), x.data<float>(), B, T, N, K}, dweight.data<float>());
}

}  // namespace

void register_linear_weight_grad_kernels(KernelTable& k) {
  k.linear_weight_grad = linear_weight_grad;
}

}  // namespace rg::cpu
