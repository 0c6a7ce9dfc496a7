// The sim cuBLAS shim (see cublas_shim.h): strided batched GEMM with Eigen, column-major.
// bf16 operands are widened to f32 (like cuBLAS's f32 accumulation); TF32 is ignored.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"  // inside Eigen 3.4's AVX bf16 code
// GCC 12 flags its own AVX-512 intrinsics (`__m512 __Y = __Y;`) as maybe-uninitialized
// when Eigen's GEMM packing inlines them on -march=native AVX-512 machines (a GCC bug).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include "core/dtype.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/cublas_shim.h"

namespace rg::sim {
namespace {

using Stride = Eigen::OuterStride<>;
template <typename T>
using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// op(X) as a dense column-major matrix in compute type T.
template <typename T>
ColMatrix<T> load(const void* x, cudaDataType type, int ld, cublasOperation_t op, int rows,
                  int cols) {
  int stored_rows = op == CUBLAS_OP_N ? rows : cols, stored_cols = op == CUBLAS_OP_N ? cols : rows;
  ColMatrix<T> m(stored_rows, stored_cols);
  for (int j = 0; j < stored_cols; ++j)
    for (int i = 0; i < stored_rows; ++i) {
      int64_t at = int64_t(j) * ld + i;
      switch (type) {
        case CUDA_R_32F:
          m(i, j) = T(static_cast<const float*>(x)[at]);
          break;
        case CUDA_R_64F:
          m(i, j) = T(static_cast<const double*>(x)[at]);
          break;
        case CUDA_R_16BF:
          m(i, j) = T(float(static_cast<const rg::bf16_t*>(x)[at]));
          break;
      }
    }
  if (op == CUBLAS_OP_T) return m.transpose();
  return m;
}

size_t element_size(cudaDataType t) { return t == CUDA_R_64F ? 8 : (t == CUDA_R_32F ? 4 : 2); }

template <typename T>
void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, T alpha, const void* A,
          cudaDataType at, int lda, long long sa, const void* B, cudaDataType bt, int ldb,
          long long sb, T beta, void* C, cudaDataType ct, int ldc, long long sc, int batch) {
  for (int b = 0; b < batch; ++b) {
    const char* a_ptr = static_cast<const char*>(A) + b * sa * element_size(at);
    const char* b_ptr = static_cast<const char*>(B) + b * sb * element_size(bt);
    char* c_ptr = static_cast<char*>(C) + b * sc * element_size(ct);
    ColMatrix<T> prod = load<T>(a_ptr, at, lda, ta, m, k) * load<T>(b_ptr, bt, ldb, tb, k, n);
    for (int j = 0; j < n; ++j) {
      // sim-check: cuBLAS's writes are not instrumented; mark this column written
      check::mark_written(c_ptr + int64_t(j) * ldc * element_size(ct), m * element_size(ct));
      for (int i = 0; i < m; ++i) {
        int64_t idx = int64_t(j) * ldc + i;
        switch (ct) {
          case CUDA_R_32F: {
            float* c = reinterpret_cast<float*>(c_ptr) + idx;
            *c = float(alpha * prod(i, j) + (beta != T(0) ? beta * T(*c) : T(0)));
            break;
          }
          case CUDA_R_64F: {
            double* c = reinterpret_cast<double*>(c_ptr) + idx;
            *c = double(alpha * prod(i, j) + (beta != T(0) ? beta * T(*c) : T(0)));
            break;
          }
          case CUDA_R_16BF: {
            rg::bf16_t* c = reinterpret_cast<rg::bf16_t*>(c_ptr) + idx;
            *c =
                rg::bf16_t(float(alpha * prod(i, j) + (beta != T(0) ? beta * T(float(*c)) : T(0))));
            break;
          }
        }
      }
    }
  }
}

bool leading_ok(cublasOperation_t op, int rows, int cols, int ld) {
  return ld >= std::max(1, op == CUBLAS_OP_N ? rows : cols);
}

}  // namespace

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long strideA, const void* B,
    cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C, cudaDataType Ctype,
    int ldc, long long strideC, int batch_count, cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (m < 0 || n < 0 || k < 0 || batch_count < 0 || !leading_ok(transa, m, k, lda) ||
      !leading_ok(transb, k, n, ldb) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (compute == CUBLAS_COMPUTE_64F) {
    if (Atype != CUDA_R_64F || Btype != CUDA_R_64F || Ctype != CUDA_R_64F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    gemm<double>(transa, transb, m, n, k, *static_cast<const double*>(alpha), A, Atype, lda,
                 strideA, B, Btype, ldb, strideB, *static_cast<const double*>(beta), C, Ctype, ldc,
                 strideC, batch_count);
  } else {
    if (Atype == CUDA_R_64F || Btype == CUDA_R_64F || Ctype == CUDA_R_64F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    gemm<float>(transa, transb, m, n, k, *static_cast<const float*>(alpha), A, Atype, lda, strideA,
                B, Btype, ldb, strideB, *static_cast<const float*>(beta), C, Ctype, ldc, strideC,
                batch_count);
  }
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "unknown cublas status";
}

}  // namespace rg::sim
