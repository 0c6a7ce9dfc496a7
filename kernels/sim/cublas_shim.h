// A tiny stand-in for the part of cuBLAS and cuBLASLt that kernels/cuda/matmul.cu uses, so
// that the sim build runs the very same GEMM plumbing (transpose flags, leading dimensions,
// batch strides, linear's bias epilogue) as cuda. Same names, same column-major semantics;
// served by Eigen. cuBLASLt's opaque handle, descriptors and layouts are small structs here.
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
// CUBLAS_COMPUTE_64F, float otherwise. The handle is the sim stream: on a delayed or
// capturing stream (stream_queue.h) the GEMM is queued, as cublasLtMatmul's on its stream.
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long strideC, int batch_count,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo);
const char* cublasGetStatusString(cublasStatus_t status);

// ---- cuBLASLt: one (non-batched) matmul D = alpha * op(A) op(B) + beta * C, with C == D,
// and the BIAS epilogue: bias[i] (D's type, length = D's rows) added to every column.
struct LtContext {};
struct LtMatmulDesc {
  cublasComputeType_t compute;
  cudaDataType scale;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = 1;
  const void* bias = nullptr;
};
struct LtMatrixLayout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
};
struct LtPreference {
  uint64_t max_workspace = 0;
};
using cublasLtHandle_t = LtContext*;
using cublasLtMatmulDesc_t = LtMatmulDesc*;
using cublasLtMatrixLayout_t = LtMatrixLayout*;
using cublasLtMatmulPreference_t = LtPreference*;
struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
enum cublasLtMatmulDescAttributes_t {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8
};
enum cublasLtEpilogue_t { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_BIAS = 4 };
enum cublasLtMatmulPreferenceAttributes_t {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType scale_type);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size);
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld);
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size);
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref);
// One algorithm (any layout the GEMM above takes), or NOT_SUPPORTED for 64F compute with an
// epilogue, which matmul.cu must not ask for (it takes the cuBLAS path for f64).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, void* stream);

// For tests of matmul.cu's plan cache: how many heuristic queries and matmul descriptors the
// shim has served (process-wide), and a switch that makes the heuristic offer no algorithm
// (as cuBLASLt does for some shapes), so that the caller's fallback runs.
struct LtShimCounters {
  uint64_t heuristic_queries = 0;
  uint64_t descriptors_created = 0;
};
LtShimCounters lt_shim_counters();
void lt_shim_offer_no_algorithm(bool refuse);

}  // namespace rg::sim

#define CUBLAS_CHECK(call)                                                           \
  do {                                                                               \
    cublasStatus_t rg_status_ = (call);                                              \
    if (rg_status_ != CUBLAS_STATUS_SUCCESS)                                         \
      RG_FAIL("cublas (sim): ", #call, " failed at ", __FILE__, ":", __LINE__, ": ", \
              ::rg::sim::cublasGetStatusString(rg_status_));                         \
  } while (0)
