// A tiny stand-in for the part of cuBLAS that kernels/cuda/matmul.cu uses, so that the sim
// build runs the very same GEMM plumbing (transpose flags, leading dimensions, batch
// strides) as cuda. Same names, same column-major semantics; served by Eigen.
#pragma once
#include <cstdint>

#include "core/error.h"

// In namespace rg::sim so that a cuda build, which links the real cuBLAS too, never mixes
// the two up.
namespace rg::sim {

using cublasHandle_t = void*;
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 };
enum cublasComputeType_t {
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_COMPUTE_64F = 70
};
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_NOT_SUPPORTED = 15
};

// C[i] = alpha * op(A[i]) * op(B[i]) + beta * C[i] for i < batch_count, column-major;
// op(A) is m x k, op(B) is k x n, C is m x n. alpha/beta point to double for
// CUBLAS_COMPUTE_64F, float otherwise.
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long strideC, int batch_count,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo);
const char* cublasGetStatusString(cublasStatus_t status);

}  // namespace rg::sim

#define CUBLAS_CHECK(call)                                                           \
  do {                                                                               \
    cublasStatus_t rg_status_ = (call);                                              \
    if (rg_status_ != CUBLAS_STATUS_SUCCESS)                                         \
      RG_FAIL("cublas (sim): ", #call, " failed at ", __FILE__, ":", __LINE__, ": ", \
              ::rg::sim::cublasGetStatusString(rg_status_));                         \
  } while (0)
