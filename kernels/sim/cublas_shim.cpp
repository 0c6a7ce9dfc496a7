// The sim cuBLAS shim (see cublas_shim.h): strided batched GEMM with Eigen, column-major,
// and cuBLASLt's matmul with the bias epilogue on the same GEMM. bf16 operands are widened to
// f32 (like cuBLAS's f32 accumulation), the bias added before the one rounding of the result;
// CUBLAS_COMPUTE_32F_FAST_TF32 rounds the f32 operands to TF32 (10-bit mantissa, to nearest
// even) before the product, as tensor cores read them, so that the TF32 switch shows on sim.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"  // inside Eigen 3.4's AVX bf16 code
// GCC 12 flags its own AVX-512 intrinsics (`__m512 __Y = __Y;`) as maybe-uninitialized
// when Eigen's GEMM packing inlines them on -march=native AVX-512 machines (a GCC bug).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include <atomic>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/tf32.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/cublas_shim.h"
#include "kernels/sim/stream_queue.h"

namespace rg::sim {
namespace {

using Stride = Eigen::OuterStride<>;
template <typename T>
using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// Element `at` of a buffer of `type`, in compute type T (f32 rounded to TF32 when `tf32`).
template <typename T>
T element(const void* x, cudaDataType type, int64_t at, bool tf32 = false) {
  switch (type) {
    case CUDA_R_32F:
      return tf32 ? T(round_to_tf32(static_cast<const float*>(x)[at]))
                  : T(static_cast<const float*>(x)[at]);
    case CUDA_R_64F:
      return T(static_cast<const double*>(x)[at]);
    case CUDA_R_16BF:
      return T(float(static_cast<const rg::bf16_t*>(x)[at]));
  }
  return T(0);
}

// op(X) as a dense column-major matrix in compute type T.
template <typename T>
ColMatrix<T> load(const void* x, cudaDataType type, int ld, cublasOperation_t op, int rows,
                  int cols, bool tf32) {
  int stored_rows = op == CUBLAS_OP_N ? rows : cols, stored_cols = op == CUBLAS_OP_N ? cols : rows;
  ColMatrix<T> m(stored_rows, stored_cols);
  for (int j = 0; j < stored_cols; ++j)
    for (int i = 0; i < stored_rows; ++i) m(i, j) = element<T>(x, type, int64_t(j) * ld + i, tf32);
  if (op == CUBLAS_OP_T) return m.transpose();
  return m;
}

size_t element_size(cudaDataType t) { return t == CUDA_R_64F ? 8 : (t == CUDA_R_32F ? 4 : 2); }

template <typename T>
void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, T alpha, const void* A,
          cudaDataType at, int lda, long long sa, const void* B, cudaDataType bt, int ldb,
          long long sb, T beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
          const void* bias = nullptr, bool tf32 = false) {
  for (int b = 0; b < batch; ++b) {
    const char* a_ptr = static_cast<const char*>(A) + b * sa * element_size(at);
    const char* b_ptr = static_cast<const char*>(B) + b * sb * element_size(bt);
    char* c_ptr = static_cast<char*>(C) + b * sc * element_size(ct);
    ColMatrix<T> prod =
        load<T>(a_ptr, at, lda, ta, m, k, tf32) * load<T>(b_ptr, bt, ldb, tb, k, n, tf32);
    for (int j = 0; j < n; ++j) {
      // sim-check: cuBLAS's writes are not instrumented; mark this column written
      check::mark_written(c_ptr + int64_t(j) * ldc * element_size(ct), m * element_size(ct));
      for (int i = 0; i < m; ++i) {
        int64_t idx = int64_t(j) * ldc + i;
        // cuBLASLt's BIAS epilogue: bias[i] added to row i of every column, before rounding.
        T v = alpha * prod(i, j);
        if (bias) v += element<T>(bias, ct, i);
        if (beta != T(0)) v += beta * element<T>(c_ptr, ct, idx);
        switch (ct) {
          case CUDA_R_32F:
            reinterpret_cast<float*>(c_ptr)[idx] = float(v);
            break;
          case CUDA_R_64F:
            reinterpret_cast<double*>(c_ptr)[idx] = double(v);
            break;
          case CUDA_R_16BF:
            reinterpret_cast<rg::bf16_t*>(c_ptr)[idx] = rg::bf16_t(float(v));
            break;
        }
      }
    }
  }
}

bool leading_ok(cublasOperation_t op, int rows, int cols, int ld) {
  return ld >= std::max(1, op == CUBLAS_OP_N ? rows : cols);
}

// Runs `work` now, or queues it when `stream` is delayed or capturing (stream_queue.h): the
// GEMM is then ordered with the stream's kernels. Its arguments are captured by value.
template <typename Work>
void run_on(void* stream, Work work) {
  if (is_delayed(stream))
    enqueue(stream, std::move(work));
  else
    work();
}

}  // namespace

// The handle is the stream on sim (matmul.cu passes it).
cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long strideA, const void* B,
    cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C, cudaDataType Ctype,
    int ldc, long long strideC, int batch_count, cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (m < 0 || n < 0 || k < 0 || batch_count < 0 || !leading_ok(transa, m, k, lda) ||
      !leading_ok(transb, k, n, ldb) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (compute == CUBLAS_COMPUTE_64F) {
    if (Atype != CUDA_R_64F || Btype != CUDA_R_64F || Ctype != CUDA_R_64F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    const double a = *static_cast<const double*>(alpha), b = *static_cast<const double*>(beta);
    run_on(handle, [=] {
      gemm<double>(transa, transb, m, n, k, a, A, Atype, lda, strideA, B, Btype, ldb, strideB, b, C,
                   Ctype, ldc, strideC, batch_count);
    });
  } else {
    if (Atype == CUDA_R_64F || Btype == CUDA_R_64F || Ctype == CUDA_R_64F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
    const bool tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    run_on(handle, [=] {
      gemm<float>(transa, transb, m, n, k, a, A, Atype, lda, strideA, B, Btype, ldb, strideB, b, C,
                  Ctype, ldc, strideC, batch_count, nullptr, tf32);
    });
  }
  return CUBLAS_STATUS_SUCCESS;
}

// ---- cuBLASLt
namespace {
std::atomic<uint64_t> heuristic_queries{0}, descriptors_created{0};
std::atomic<bool> offer_no_algorithm{false};
}  // namespace

LtShimCounters lt_shim_counters() { return {heuristic_queries.load(), descriptors_created.load()}; }
void lt_shim_offer_no_algorithm(bool refuse) { offer_no_algorithm = refuse; }

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  static LtContext context;
  *handle = &context;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType scale_type) {
  *desc = new LtMatmulDesc{compute, scale_type};
  descriptors_created++;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              size_t size) {
  auto take = [&](auto* field) {
    if (size != sizeof(*field)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(field, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return take(&desc->transa);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return take(&desc->transb);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return take(&desc->epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return take(&desc->bias);
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < std::max<int64_t>(1, int64_t(rows))) return CUBLAS_STATUS_INVALID_VALUE;
  *layout = new LtMatrixLayout{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = new LtPreference{};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t size) {
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
    if (size != sizeof(pref->max_workspace)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&pref->max_workspace, buf, size);
  } else if (size != sizeof(uint32_t)) {  // the alignments: the shim needs none
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  heuristic_queries++;
  if (offer_no_algorithm) {
    *returned = 0;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (desc->compute == CUBLAS_COMPUTE_64F && desc->epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  *returned = requested > 0 ? 1 : 0;
  if (requested > 0) {
    results[0] = cublasLtMatmulHeuristicResult_t{};
    results[0].state = CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t*, void*, size_t, void* stream) {
  auto ta = cublasOperation_t(desc->transa), tb = cublasOperation_t(desc->transb);
  const int m = int(Ddesc->rows), n = int(Ddesc->cols);
  const int k = int(ta == CUBLAS_OP_N ? Adesc->cols : Adesc->rows);
  const bool bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS;
  if (C != D || Cdesc->ld != Ddesc->ld ||
      (ta == CUBLAS_OP_N ? Adesc->rows : Adesc->cols) != uint64_t(m) ||
      (tb == CUBLAS_OP_N ? Bdesc->cols : Bdesc->rows) != uint64_t(n) ||
      (tb == CUBLAS_OP_N ? Bdesc->rows : Bdesc->cols) != uint64_t(k) || (bias && !desc->bias) ||
      (!bias && desc->epilogue != CUBLASLT_EPILOGUE_DEFAULT))
    return CUBLAS_STATUS_NOT_SUPPORTED;  // the subset matmul.cu uses: D written in place of C
  const void* bias_ptr = bias ? desc->bias : nullptr;
  const int lda = int(Adesc->ld), ldb = int(Bdesc->ld), ldd = int(Ddesc->ld);
  const cudaDataType at = Adesc->type, bt = Bdesc->type, dt = Ddesc->type;
  if (desc->compute == CUBLAS_COMPUTE_64F) {
    if (bias) return CUBLAS_STATUS_NOT_SUPPORTED;
    const double a = *static_cast<const double*>(alpha), b = *static_cast<const double*>(beta);
    run_on(stream, [=] {
      gemm<double>(ta, tb, m, n, k, a, A, at, lda, 0, B, bt, ldb, 0, b, D, dt, ldd, 0, 1);
    });
  } else {
    const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
    const bool tf32 = desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    run_on(stream, [=] {
      gemm<float>(ta, tb, m, n, k, a, A, at, lda, 0, B, bt, ldb, 0, b, D, dt, ldd, 0, 1, bias_ptr,
                  tf32);
    });
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
