// CPU batched GEMM through Eigen: out[b] = a[b] @ b[b], a [B,M,K], b [B,K,N], out [B,M,N]
// contiguous. Each 2-D slice of a/b is mapped in place as row-major (inner stride 1) or
// column-major (a transposed view, outer stride 1) with any outer stride; a slice that is
// neither is copied to contiguous first. Batch strides may be 0 (broadcast).
// Threading: the products are split into tasks of whole batches and blocks of output rows,
// run by rg::parallel_for, each a single-threaded Eigen GEMM (Eigen's own OpenMP GEMM
// busy-waits on its other threads, which costs whole scheduler slices when another process
// shares a core). bf16 computes in f32.
#include <algorithm>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"  // inside Eigen 3.4's AVX bf16 code
// GCC 12 flags its own AVX-512 intrinsics (`__m512 __Y = __Y;`) as maybe-uninitialized
// when Eigen's GEMM packing inlines them on -march=native AVX-512 machines (a GCC bug).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/cpu/eigen_threads.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu {
namespace {

// Multiply-adds below which a product is not split across threads (about 0.1 ms).
constexpr int64_t kGemmGrain = int64_t(1) << 20;

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

template <typename T, int OrderA, int OrderB>
void gemm(T* c, const T* a, const T* b, int64_t m, int64_t k, int64_t n, int64_t lda, int64_t ldb) {
  OutMap<T> cm(c, m, n);
  MatrixMap<T, OrderA> am(a, m, k, Eigen::OuterStride<>(lda));
  MatrixMap<T, OrderB> bm(b, k, n, Eigen::OuterStride<>(ldb));
  cm.noalias() = am * bm;
}

template <typename T>
void gemm_any(T* c, const T* a, SliceLayout la, const T* b, SliceLayout lb, int64_t m, int64_t k,
              int64_t n) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, T(0));
    return;
  }
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  int64_t lda = la.outer_stride, ldb = lb.outer_stride;
  if (la.row_major && lb.row_major)
    gemm<T, R, R>(c, a, b, m, k, n, lda, ldb);
  else if (la.row_major)
    gemm<T, R, C>(c, a, b, m, k, n, lda, ldb);
  else if (lb.row_major)
    gemm<T, C, R>(c, a, b, m, k, n, lda, ldb);
  else
    gemm<T, C, C>(c, a, b, m, k, n, lda, ldb);
}

template <typename T>
void matmul_typed(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  T* c = out.data<T>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
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
  // Blocks are whole multiples of 32 rows, so Eigen's register tiles stay full.
  const int64_t rows_per_task = std::min<int64_t>(m, ((m + split - 1) / split + 31) / 32 * 32);
  const int64_t blocks = (m + rows_per_task - 1) / rows_per_task;
  auto task = [&](int64_t t) {
    const int64_t i = t / blocks, r0 = (t % blocks) * rows_per_task;
    const int64_t rows = std::min(rows_per_task, m - r0);
    const T* a_rows = pa + i * a_batch_stride + r0 * (la.row_major ? la.outer_stride : 1);
    gemm_any<T>(c + i * m * n + r0 * n, a_rows, la, pb + i * b_batch_stride, lb, rows, k, n);
  };
  const int64_t grain =
      std::max<int64_t>(1, kGemmGrain / std::max<int64_t>(1, rows_per_task * n * k));
  EigenSingleThread single;
  parallel_for(batch * blocks, grain, [&](int64_t begin, int64_t end) {
    EigenSingleThread scope;
    for (int64_t t = begin; t < end; ++t) task(t);
  });
}

void matmul(const Tensor& out, const Tensor& a, const Tensor& b) {
  RG_DEBUG_ASSERT(out.dim() == 3 && a.dim() == 3 && b.dim() == 3,
                  "matmul: kernel expects 3-D tensors, got ", shape_str(a.shape()), " @ ",
                  shape_str(b.shape()), " -> ", shape_str(out.shape()));
  RG_DEBUG_ASSERT(a.size(0) == out.size(0) && b.size(0) == out.size(0) &&
                      a.size(1) == out.size(1) && b.size(2) == out.size(2) &&
                      a.size(2) == b.size(1),
                  "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
                  " cannot be multiplied into ", shape_str(out.shape()));
  RG_DEBUG_ASSERT(a.dtype() == out.dtype() && b.dtype() == out.dtype(), "matmul: dtypes ",
                  a.dtype(), ", ", b.dtype(), " and ", out.dtype(), " differ");
  RG_DEBUG_ASSERT(out.is_contiguous(), "matmul: output must be contiguous");
  if (out.dtype() == DType::bf16) {
    Tensor out32 = empty(out.shape(), DType::f32);
    matmul_typed<float>(out32, contiguous_as(a, DType::f32), contiguous_as(b, DType::f32));
    copy_into(out, out32);
    return;
  }
  dispatch_dtype<DTypes::f32_f64>(out.dtype(), "matmul",
                                  [&]<typename T>(TypeTag<T>) { matmul_typed<T>(out, a, b); });
}

}  // namespace

void register_matmul_kernels(KernelTable& k) {
  Eigen::initParallel();
  k.matmul = matmul;
}
}  // namespace rg::cpu
