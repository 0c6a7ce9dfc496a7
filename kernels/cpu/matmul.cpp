// CPU batched GEMM: out[b] = a[b] @ b[b], a [B,M,K], b [B,K,N], out [B,M,N]
// contiguous. Each 2-D slice of a/b is mapped in place as row-major (inner stride 1) or
// column-major (a transposed view, outer stride 1) with any outer stride; a slice that is
// neither is copied to contiguous first. Batch strides may be 0 (broadcast). f32 products
// with a row-major a run on ringgrad's own GEMM (gemm_f32.cpp) where the build has its tuned
// kernel, the others on Eigen.
// Threading: the products are split into tasks of whole batches and blocks of output rows,
// run by rg::parallel_for, each a single-threaded GEMM (Eigen's own OpenMP GEMM busy-waits on
// its other threads, which costs whole scheduler slices when another process shares a core);
// a single f32 product on gemm_f32 is split by blocks of columns instead. bf16 computes in f32.
// linear: out [M,N] = x [M,K] @ weight^T + bias, the same GEMM tasks with the bias as the
// epilogue: gemm_f32's register tiles start from the bias; on Eigen each block of output rows
// starts as the broadcast bias (or zero) and the product is accumulated into it (`noalias()
// +=`), instead of Eigen zeroing the block and a separate add pass over the whole output.
#include <algorithm>
#include <type_traits>

#include "kernels/cpu/capability.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"  // inside Eigen 3.4's AVX bf16 code
// GCC 12 flags its own AVX-512 intrinsics (`__m512 __Y = __Y;`) as maybe-uninitialized
// when Eigen's GEMM packing inlines them on -march=native AVX-512 machines (a GCC bug).
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same at -O1 (the sanitizer build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/eigen_threads.h"
#include "kernels/cpu/gemm_f32.h"
#include "kernels/cpu/tensor_utils.h"
#include "kernels/linear_shapes.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

// Multiply-adds below which a product is not split across threads (about 0.1 ms).
constexpr int64_t kGemmGrain = int64_t(1) << 20;
// Output columns from which f32 products use gemm_f32 (one AVX-512 panel).
constexpr int64_t kOwnGemmMinColumns = 64;

template <typename T, int Order>
using MatrixMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0,
                             Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// How one [rows, cols] slice with strides (s_row, s_col) is read.
struct SliceLayout {
  bool row_major = true;
  int64_t outer_stride = 0;
};

// Layout usable in place, or nullopt-like {valid=false} when the slice must be copied.
bool slice_layout(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col, SliceLayout* layout) {
  if ((cols == 1 || s_col == 1) && (rows == 1 || s_row >= cols)) {
    *layout = {true, rows == 1 ? cols : s_row};
    return true;
  }
  if ((rows == 1 || s_row == 1) && (cols == 1 || s_col >= rows)) {
    *layout = {false, cols == 1 ? rows : s_col};
    return true;
  }
  return false;
}

// c = a @ b, or c += a @ b when `accumulate` (c then holds the bias rows).
template <typename T, int OrderA, int OrderB>
void gemm(T* c, const T* a, const T* b, int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldb,
          bool accumulate) {
  OutMap<T> cm(c, m, n);
  MatrixMap<T, OrderA> am(a, m, k, Eigen::OuterStride<>(lda));
  MatrixMap<T, OrderB> bm(b, k, n, Eigen::OuterStride<>(ldb));
  if (accumulate)
    cm.noalias() += am * bm;
  else
    cm.noalias() = am * bm;
}

// A slice's element strides: (row, column) = (outer, 1) row-major, (1, outer) column-major.
int64_t row_stride(const SliceLayout& l) { return l.row_major ? l.outer_stride : 1; }
int64_t column_stride(const SliceLayout& l) { return l.row_major ? 1 : l.outer_stride; }

// f32 products go to ringgrad's own GEMM (gemm_f32.h) where this build has its tuned kernel,
// a is row-major (its rows give the broadcast scalars) and c has at least one whole panel of
// columns (64 with AVX-512): linear's forward (b = weight^T by stride) and its input gradient
// (b = weight), 5-15% faster than Eigen at GPT's shapes (docs/performance.md, change 10).
// Narrower products stay with Eigen, which is faster there.
bool use_own_gemm(const SliceLayout& la, int64_t n) {
  return gemm_f32_tuned() && la.row_major && n >= kOwnGemmMinColumns;
}

// One f32 product split between `split` threads by blocks of whole panels of columns, not
// rows: each thread then packs only its own columns of b (split by rows, every thread packed
// all of b: at GPT 2 x 128's 512 rows that was a fifth of each thread's time). Every element
// is computed as by one call, so the bits do not depend on the split.
void own_gemm_by_columns(float* c, const float* a, SliceLayout la, const float* b, SliceLayout lb,
                         int64_t m, int64_t k, int64_t n, const float* bias, int64_t split) {
  const int64_t b_row = row_stride(lb), b_col = column_stride(lb);
  const int64_t panel = kOwnGemmMinColumns;
  const int64_t columns_per_task = ((n + split - 1) / split + panel - 1) / panel * panel;
  const int64_t blocks = (n + columns_per_task - 1) / columns_per_task;
  parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t j0 = t * columns_per_task, columns = std::min(columns_per_task, n - j0);
      gemm_f32(c + j0, n, a, la.outer_stride, b + j0 * b_col, b_row, b_col, m, k, columns, false,
               bias ? bias + j0 : nullptr);
    }
  });
}

// c [m,n] = a @ b; with a bias (linear), c = bias rows + a @ b.
template <typename T>
void gemm_any(T* c, const T* a, SliceLayout la, const T* b, SliceLayout lb, int64_t m, int64_t k,
              int64_t n, const T* bias) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (use_own_gemm(la, n)) {  // the bias as the tiles' start
      return gemm_f32(c, n, a, la.outer_stride, b, row_stride(lb), column_stride(lb), m, k, n,
                      false, bias);
    }
  }
  if (bias)
    for (int64_t i = 0; i < m; ++i) std::copy(bias, bias + n, c + i * n);
  if (k == 0) {
    if (!bias) std::fill(c, c + m * n, T(0));
    return;
  }
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  int64_t lda = la.outer_stride, ldb = lb.outer_stride;
  const bool acc = bias != nullptr;
  if (la.row_major && lb.row_major)
    gemm<T, R, R>(c, a, b, m, k, n, lda, ldb, acc);
  else if (la.row_major)
    gemm<T, R, C>(c, a, b, m, k, n, lda, ldb, acc);
  else if (lb.row_major)
    gemm<T, C, R>(c, a, b, m, k, n, lda, ldb, acc);
  else
    gemm<T, C, C>(c, a, b, m, k, n, lda, ldb, acc);
}

// out[b] = a[b] @ b[b] (+ bias [N], contiguous, when defined: linear's epilogue).
template <typename T>
void matmul_typed(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  T* c = out.data<T>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const T* pbias = bias.defined() ? bias.data<T>() : nullptr;
  SliceLayout la, lb;
  bool a_ok = slice_layout(m, k, a.stride(1), a.stride(2), &la);
  bool b_ok = slice_layout(k, n, b.stride(1), b.stride(2), &lb);
  // Slices that fit neither layout: copy the whole operand once (broadcast batches stay 1).
  Tensor a_copy, b_copy;
  int64_t a_batch_stride = a.stride(0), b_batch_stride = b.stride(0);
  if (!a_ok) {
    a_copy = contiguous_as(a, a.dtype());
    pa = a_copy.data<T>(), la = {true, k}, a_batch_stride = m * k;
  }
  if (!b_ok) {
    b_copy = contiguous_as(b, b.dtype());
    pb = b_copy.data<T>(), lb = {true, n}, b_batch_stride = k * n;
  }
  // Tasks are (batch, block of output rows) pairs, each a single-threaded Eigen product, all
  // in one parallel region. A product is split into at most one block per thread and only
  // into blocks of at least kGemmGrain multiply-adds, so small products stay whole, and no
  // thread ever spins inside Eigen's GEMM waiting for another.
  const int64_t work = m * n * k;
  const int64_t split = std::max<int64_t>(
      1, std::min<int64_t>({get_num_threads(), work / kGemmGrain, (m + 31) / 32}));
  if constexpr (std::is_same_v<T, float>) {
    if (batch == 1 && split > 1 && use_own_gemm(la, n) && n >= split * kOwnGemmMinColumns)
      return own_gemm_by_columns(c, pa, la, pb, lb, m, k, n, pbias, split);
  }
  // Blocks are whole multiples of 32 rows, so Eigen's register tiles stay full.
  const int64_t rows_per_task = std::min<int64_t>(m, ((m + split - 1) / split + 31) / 32 * 32);
  const int64_t blocks = (m + rows_per_task - 1) / rows_per_task;
  auto task = [&](int64_t t) {
    const int64_t i = t / blocks, r0 = (t % blocks) * rows_per_task;
    const int64_t rows = std::min(rows_per_task, m - r0);
    const T* a_rows = pa + i * a_batch_stride + r0 * (la.row_major ? la.outer_stride : 1);
    gemm_any<T>(c + i * m * n + r0 * n, a_rows, la, pb + i * b_batch_stride, lb, rows, k, n, pbias);
  };
  const int64_t grain =
      std::max<int64_t>(1, kGemmGrain / std::max<int64_t>(1, rows_per_task * n * k));
  EigenSingleThread single;
  parallel_for(batch * blocks, grain, [&](int64_t begin, int64_t end) {
    EigenSingleThread scope;
    for (int64_t t = begin; t < end; ++t) task(t);
  });
}

// The typed GEMM of out's dtype (bf16: in f32, rounded once at the end); bias may be undefined.
void gemm_dispatch(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  if (out.dtype() == DType::bf16) {
    Tensor out32 = empty(out.shape(), DType::f32);
    Tensor bias32 = bias.defined() ? contiguous_as(bias, DType::f32) : Tensor();
    matmul_typed<float>(out32, contiguous_as(a, DType::f32), contiguous_as(b, DType::f32), bias32);
    copy_into(out, out32);
    return;
  }
  dispatch_dtype<DTypes::f32_f64>(out.dtype(), "matmul", [&]<typename T>(TypeTag<T>) {
    matmul_typed<T>(out, a, b, bias.defined() ? contiguous_as(bias, bias.dtype()) : Tensor());
  });
}

void matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  RG_KERNEL_CONTRACT(check_matmul(out, a, b));
  gemm_dispatch(out, a, b, Tensor());
}

// out [M,N] = x [M,K] @ weight [N,K]^T + bias: the batched GEMM with one batch, weight^T
// read in place as a column-major [K,N] view, the bias rows as the accumulator's start.
void linear(const Tensor& out, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  debug_check_linear_shapes(out, x, weight, bias);
  const int64_t m = out.size(0), n = out.size(1), k = x.size(1);
  Tensor out3 = make_view(out, {1, m, n}, {m * n, n, 1}, out.offset());
  Tensor x3 = make_view(x, {1, m, k}, {0, x.stride(0), x.stride(1)}, x.offset());
  Tensor wt3 =
      make_view(weight, {1, k, n}, {0, weight.stride(1), weight.stride(0)}, weight.offset());
  gemm_dispatch(out3, x3, wt3, bias);
}

}  // namespace

void register_matmul_kernels(KernelTable& k) {
  Eigen::initParallel();
  k.matmul = matmul;
  k.linear = linear;
}
}  // namespace rg::cpu::RG_CPU_CAP
