// CPU weight gradient of linear over sequences: dweight [N,K] = sum over b of dy[b]^T @ x[b],
// dy [B,T,N] and x [B,T,K] contiguous (f32 and f64).
//
// Numerics: each sequence's product P_b = dy[b]^T x[b] is summed over its T rows in the
// compute type (one FMA chain per element, t in order), and the P_b are added into dweight in
// b order, in the compute type. A batch split into micro-batches thus makes the same
// per-sequence products as the whole batch. (Measured on the f32 accumulation test, k
// micro-batches against one batch after 3 AdamW steps, worst parameter error against its
// 1e-5 tolerance: this 1.6e-6; the P_b summed in double and rounded once 9.7e-6; one GEMM
// chain over all B*T rows 2.1e-5, docs/performance.md.)
//
// f32 algorithm: dy^T's rows are dy's columns, read in place. A register tile of R rows of
// dweight (n0..n0+R) by 16 J columns (k0..) accumulates, for each t of one sequence, the
// outer product of dy[b,t,n0..n0+R) (broadcast scalars) and x[b,t,k0..) (vectors): R x J FMAs
// per R + J loads. x's 64 columns are read from a packed copy (pack_panel). After the sequence's T
// rows the tile is added into dweight, whose next tile is prefetched meanwhile. Sequences go
// outermost, so one sequence's 64-column panel of x stays in L1 while the row blocks read it. Tasks
// own row blocks and every element sees the sequences in b order: the result does not depend on the
// thread count. AVX-512 and AVX2 use kernels/cpu/simd.h's vectors (tiles of 6 x 64 and
// 6 x 16 columns); the baseline build the same loop on 16-float arrays. Columns narrower than a
// vector take a scalar loop. f64: Eigen's product per sequence, accumulated into the result.
#include "kernels/cpu/capability.h"
#include "kernels/cpu/simd.h"  // before Eigen, which would read immintrin.h unguarded
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"      // inside Eigen 3.4's AVX bf16 code
#pragma GCC diagnostic ignored "-Wuninitialized"        // the same at -O1 (the sanitizer build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on Eigen's AVX-512 packing
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/cpu/eigen_threads.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int kRows = 6;           // R: rows of a register tile
constexpr int kPanelColumns = 64;  // x's columns packed at a time
#if RG_CPU_CAP_LEVEL > 0
constexpr int kLanes = simd::kLanes;
constexpr int kTileVecs = kLanes == 16 ? 4 : 2;  // J: vectors across a tile (64 or 16 columns)
#else
constexpr int kLanes = 16;  // the plain loop's "vectors": arrays of 16
constexpr int kTileVecs = 4;
#endif

struct Operands {
  const float* dy;  // [B,T,N]
  const float* x;   // [B,T,K]
  int64_t B, T, N, K;
};

// One sequence's rows of a tile's operands: T rows of kRows dy values (the tile's dweight
// rows) and T rows of x values (its columns), each row `stride` floats after the last.
struct Rows {
  const float* dy;
  int64_t dy_stride;
  const float* x;
  int64_t x_stride;
};

#if RG_CPU_CAP_LEVEL > 0
// Adds the R x J tile of one sequence's product (T rows of `in`) into acc (rows acc_stride
// apart); prefetches the tile at `next` (same layout; may be null), which comes after it.
template <int R, int J>
void tile_product(const Rows& in, int64_t T, float* acc, int64_t acc_stride, const float* next) {
  using namespace simd;
  F c[R][J];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) c[i][j] = zero();
  const float *dy = in.dy, *x = in.x;
  constexpr int kLinesPerRow = (J * kLanes * sizeof(float) + 63) / 64;  // 64-byte lines
  for (int64_t t = 0; t < T; ++t, dy += in.dy_stride, x += in.x_stride) {
    if (next && t < R * kLinesPerRow)
      __builtin_prefetch(
          next + t / kLinesPerRow * acc_stride + t % kLinesPerRow * int64_t(64 / sizeof(float)), 0,
          3);
    F xv[J];
    for (int j = 0; j < J; ++j) xv[j] = load(x + j * kLanes);
    for (int i = 0; i < R; ++i) {
      const F a = set1(dy[i]);
      for (int j = 0; j < J; ++j) c[i][j] = fmadd(a, xv[j], c[i][j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < J; ++j) {
      float* d = acc + i * acc_stride + j * kLanes;
      store(d, add(load(d), c[i][j]));
    }
}
#else
template <int R, int J>
void tile_product(const Rows& in, int64_t T, float* acc, int64_t acc_stride, const float*) {
  float c[R][J * kLanes] = {};
  const float *dy = in.dy, *x = in.x;
  for (int64_t t = 0; t < T; ++t, dy += in.dy_stride, x += in.x_stride)
    for (int i = 0; i < R; ++i)
      for (int l = 0; l < J * kLanes; ++l) c[i][l] += dy[i] * x[l];
  for (int i = 0; i < R; ++i)
    for (int l = 0; l < J * kLanes; ++l) acc[i * acc_stride + l] += c[i][l];
}
#endif

// Sequence b's product over the rows [n0, n0 + R) and columns [k0, k0 + J*16), added into
// acc (dweight); the columns are read from `panel`, sequence b's x[:, k0:k0+64) packed.
template <int R, int J>
void tile(const Operands& o, int64_t b, int64_t n0, int64_t k0, const float* panel, float* acc) {
  const Rows in{o.dy + b * o.T * o.N + n0, o.N, panel, kPanelColumns};
  float* mine = acc + n0 * o.K + k0;
  tile_product<R, J>(in, o.T, mine, o.K, n0 + 2 * R <= o.N ? mine + R * o.K : nullptr);
}

// Sequence b's product at element (n, k) alone: the columns no tile covers.
void element(const Operands& o, int64_t b, int64_t n, int64_t k, float* acc) {
  float s = 0;
  for (int64_t t = 0; t < o.T; ++t)
    s += o.dy[(b * o.T + t) * o.N + n] * o.x[(b * o.T + t) * o.K + k];
  acc[n * o.K + k] += s;
}

// Rows [n0, n0 + R) by the columns [k0, k0 + width), width <= kPanelColumns: whole tiles,
// then a narrower tile of the whole vectors left, then the remaining columns one by one.
template <int R>
void rows_by_panel(const Operands& o, int64_t b, int64_t n0, int64_t k0, int64_t width,
                   const float* panel, float* acc) {
  constexpr int64_t tile_width = kTileVecs * kLanes;
  int64_t c = 0;
  for (; c + tile_width <= width; c += tile_width)
    tile<R, kTileVecs>(o, b, n0, k0 + c, panel + c, acc);
  switch ((width - c) / kLanes) {
    case 3:
      if constexpr (kTileVecs > 3) tile<R, 3>(o, b, n0, k0 + c, panel + c, acc);
      break;
    case 2:
      if constexpr (kTileVecs > 2) tile<R, 2>(o, b, n0, k0 + c, panel + c, acc);
      break;
    case 1:
      tile<R, 1>(o, b, n0, k0 + c, panel + c, acc);
      break;
    default:
      break;
  }
  for (int64_t k = k0 + width / kLanes * kLanes; k < k0 + width; ++k)
    for (int i = 0; i < R; ++i) element(o, b, n0 + i, k, acc);
}

void block_by_panel(const Operands& o, int64_t b, int64_t n0, int64_t k0, int64_t width,
                    const float* panel, float* acc) {
  switch (std::min<int64_t>(kRows, o.N - n0)) {
    case 6:
      return rows_by_panel<6>(o, b, n0, k0, width, panel, acc);
    case 5:
      return rows_by_panel<5>(o, b, n0, k0, width, panel, acc);
    case 4:
      return rows_by_panel<4>(o, b, n0, k0, width, panel, acc);
    case 3:
      return rows_by_panel<3>(o, b, n0, k0, width, panel, acc);
    case 2:
      return rows_by_panel<2>(o, b, n0, k0, width, panel, acc);
    default:
      return rows_by_panel<1>(o, b, n0, k0, width, panel, acc);
  }
}

// The calling thread's buffer for one packed panel (T rows of 64 floats), kept between calls
// so that steady-state steps allocate nothing; each row one whole set of 4 cache lines.
float* panel_buffer(int64_t T) {
  constexpr size_t kLine = 64, kPad = kLine / sizeof(float);
  thread_local std::vector<float> buffer;
  const size_t floats = size_t(T) * kPanelColumns + kPad;
  if (buffer.size() < floats) buffer.resize(floats);
  const auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<float*>((address + kLine - 1) & ~(kLine - 1));
}

// x[b][:, k0:k0+width) into `panel`, rows of 64 floats one after the other. In place, x's
// rows are K floats apart: for K a multiple of 256 they fall into a quarter or fewer of L1's
// sets, so a 32 KiB panel did not stay in the 48 KiB cache. (GPT 4 x 256's five weight
// gradients, in-process A/B: 7% less time, 12% at K = 1024; results bit for bit the same.)
void pack_panel(const Operands& o, int64_t b, int64_t k0, int64_t width, float* panel) {
  const float* x = o.x + b * o.T * o.K + k0;
  for (int64_t t = 0; t < o.T; ++t)
    std::copy(x + t * o.K, x + t * o.K + width, panel + t * kPanelColumns);
}

// Tasks own blocks of kRows rows of dweight. Sequences go outermost: x[b]'s 64-column panel
// (T rows, 16-32 KiB) stays in L1 while every row block of the task reads it, and dy[b] in
// L2; each sequence's tiles are added into dweight (zeroed by the task first), in b order.
// (Row blocks outermost, all B*T rows per tile, read x from L2 or beyond once per block:
// 70-80 GFLOP/s at GPT 4 x 256's shapes instead of 150.)
void weight_grad_f32(const Operands& o, float* out) {
  const int64_t blocks = (o.N + kRows - 1) / kRows, width = kPanelColumns;
  const int64_t block_work = std::max<int64_t>(1, kRows * o.K * o.B * o.T);
  parallel_for(blocks, std::max<int64_t>(1, (int64_t(1) << 20) / block_work),
               [&](int64_t first, int64_t last) {
                 std::fill(out + first * kRows * o.K, out + std::min(o.N, last * kRows) * o.K, 0.f);
                 float* panel = panel_buffer(o.T);
                 for (int64_t b = 0; b < o.B; ++b)
                   for (int64_t k0 = 0; k0 < o.K; k0 += width) {
                     const int64_t w = std::min(width, o.K - k0);
                     pack_panel(o, b, k0, w, panel);
                     for (int64_t blk = first; blk < last; ++blk)
                       block_by_panel(o, b, blk * kRows, k0, w, panel, out);
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

}  // namespace rg::cpu::RG_CPU_CAP
