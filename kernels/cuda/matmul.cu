// matmul: out[b] = a[b] @ b[b]; a [B,M,K], b [B,K,N] any strides (batch stride may be 0),
// out [B,M,N] contiguous; f32 (TF32 when gpu::set_allow_tf32), bf16 with f32 accumulation,
// f64. One cublasGemmStridedBatchedEx call: a row-major product is the column-major
// product of the transposes, out^T = b^T a^T, so b is cuBLAS's "A" and a its "B".
// A slice whose rows or columns are contiguous is passed in place with a transpose flag
// and leading dimension; anything else is copied to contiguous first. On sim the call is
// served by the Eigen shim in kernels/sim/cublas_shim.h: the plumbing is the same code.
#include "kernels/cuda/common.cuh"
#if RG_SIM
#include "kernels/sim/cublas_shim.h"
#else
#include <cublas_v2.h>

#include "kernels/cuda/runtime.h"
#endif

namespace rg::RG_BACKEND {
namespace {

// How a row-major [rows, cols] slice with strides (s_row, s_col) is seen by cuBLAS.
struct Operand {
  bool usable = false;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 1;
};

// The column-major view of row-major [rows, cols] is [cols, rows] with op N and ld = s_row
// (needs contiguous columns, s_col == 1); a transposed view (s_row == 1) is [rows, cols]
// column-major with ld = s_col, passed with op T. Size-1 dims accept any stride.
Operand operand_of(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col) {
  if ((cols == 1 || s_col == 1) && (rows == 1 || s_row >= cols))
    return {true, CUBLAS_OP_N, rows == 1 ? std::max<int64_t>(cols, 1) : s_row};
  if ((rows == 1 || s_row == 1) && (cols == 1 || s_col >= rows))
    return {true, CUBLAS_OP_T, cols == 1 ? std::max<int64_t>(rows, 1) : s_col};
  return {};
}

Tensor contiguous_copy(const Tensor& t) {
  Tensor c = empty(t.shape(), t.dtype(), t.device());
  kernel_table(RG_BACKEND_DEVICE).copy(c, t);
  return c;
}

cudaDataType data_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f64:
      return CUDA_R_64F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      RG_FAIL("matmul: unsupported dtype ", dtype_name(t), " (f32, f64 or bf16)");
  }
}

void run_matmul(const Tensor& out, const Tensor& a_in, const Tensor& b_in) {
  RG_DEBUG_ASSERT(a_in.dim() == 3 && b_in.dim() == 3 && out.dim() == 3,
                  "matmul: kernel expects 3-d ", "a, b, out; got ", shape_str(a_in.shape()), ", ",
                  shape_str(b_in.shape()), ", ", shape_str(out.shape()));
  int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a_in.size(2);
  RG_DEBUG_ASSERT(a_in.size(0) == batch && b_in.size(0) == batch && a_in.size(1) == m &&
                      b_in.size(1) == k && b_in.size(2) == n,
                  "matmul: shapes ", shape_str(a_in.shape()), " @ ", shape_str(b_in.shape()),
                  " -> ", shape_str(out.shape()));
  RG_DEBUG_ASSERT(out.is_contiguous(), "matmul: out must be contiguous");
  RG_DEBUG_ASSERT(a_in.dtype() == out.dtype() && b_in.dtype() == out.dtype(), "matmul: dtypes ",
                  a_in.dtype(), ", ", b_in.dtype(), " -> ", out.dtype());
  if (out.numel() == 0) return;
  if (k == 0) {
    kernel_table(RG_BACKEND_DEVICE).fill(out, 0.0);
    return;
  }
  RG_CHECK(m < (int64_t(1) << 31) && n < (int64_t(1) << 31) && k < (int64_t(1) << 31) &&
               batch < (int64_t(1) << 31),
           "matmul: dims over 2^31 are not supported");
  Tensor a = a_in, b = b_in;
  Operand oa = operand_of(m, k, a.stride(1), a.stride(2));
  if (!oa.usable) a = contiguous_copy(a), oa = operand_of(m, k, a.stride(1), a.stride(2));
  Operand ob = operand_of(k, n, b.stride(1), b.stride(2));
  if (!ob.usable) b = contiguous_copy(b), ob = operand_of(k, n, b.stride(1), b.stride(2));
  long long stride_a = batch == 1 ? 0 : a.stride(0), stride_b = batch == 1 ? 0 : b.stride(0);
  long long stride_c = m * n;
  cudaDataType type = data_type(out.dtype());
  bool f64 = out.dtype() == DType::f64;
  cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F
          : (out.dtype() == DType::f32 && gpu::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                            : CUBLAS_COMPUTE_32F);
  float alpha32 = 1, beta32 = 0;
  double alpha64 = 1, beta64 = 0;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
#if RG_SIM
  cublasHandle_t handle = nullptr;  // the shim computes at once: run what the stream queued first
  if (sim::is_delayed(stream_for(out))) sim::drain(stream_for(out));
#else
  cublasHandle_t handle =
      static_cast<cublasHandle_t>(cuda::cublas_handle(out.device().index, stream_for(out)));
#endif
  // column-major: C^T [n, m] = op(b)^T-view [n, k] * op(a)^T-view [k, m]
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, ob.op, oa.op, int(n), int(m), int(k), alpha, b.data_ptr(), type, int(ob.ld), stride_b,
      a.data_ptr(), type, int(oa.ld), stride_a, beta, out.data_ptr(), type, int(n), stride_c,
      int(batch), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void register_matmul_kernels(KernelTable& k) { k.matmul = run_matmul; }
}  // namespace rg::RG_BACKEND
