// cuBLAS, cuBLASLt and NCCL, loaded at first use (cuda build only).
//
// Why: linked the ordinary way, every program of a CUDA-enabled build maps libcublas (54 MB),
// libcublasLt (541 MB) and libnccl (218 MB) at start, even for a run on the cpu that never
// touches a GPU; under a virtual-memory limit (ulimit -v 262144) such a run could not even
// start (tests/apps/test_cpu_memory_limit.sh). So the library links cudart only (small, and it
// loads the driver itself when first asked), and this file defines each cuBLAS / cuBLASLt /
// NCCL entry point the project calls as an extern "C" trampoline with the header's exact
// signature (the compiler checks it against the declaration: a C function cannot be
// overloaded). Its first call opens the library (library_search.cpp: RG_CUDA_LIBRARY_PATH, the
// soname, the running Python's nvidia wheels, CUDA_HOME) and dlsyms the real function, kept in
// a function-local static; a library that cannot be loaded is an rg::Error listing every place
// tried, thrown to the caller (a retry tries again).
//
// cublas_v2.h #defines cublasCreate as cublasCreate_v2 (and Destroy, SetStream,
// SetWorkspace): the trampolines carry the exported _v2 names, which are what callers reach.
// A function newly called elsewhere must be added here, or the link fails with an undefined
// reference to it (nothing links libcublas or libnccl any more).
#include "kernels/cuda/lazy_libraries.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <nccl.h>

#include "core/error.h"

namespace rg::cuda {

void* load_library_symbol(const char* soname, const char* symbol) {
  void* library = nullptr;
  try {
    library = open_cuda_library(soname);  // the search order of library_search.cpp
  } catch (const Error& e) {
    RG_FAIL(e.what(), "\n(", soname, " was needed for ", symbol, ")");
  }
  dlerror();  // clear, so a failing dlsym's message is its own
  void* function = dlsym(library, symbol);
  if (!function) {
    const char* why = dlerror();
    RG_FAIL("cuda: ", soname, " has no function ", symbol, ": ", why ? why : "unknown error");
  }
  return function;
}

namespace {

#define RG_LAZY_STRING(x) RG_LAZY_STRING2(x)
#define RG_LAZY_STRING2(x) #x
// The sonames of the headers' versions (the library's ABI changes with the major version).
constexpr const char* kCublasSoname = "libcublas.so." RG_LAZY_STRING(CUBLAS_VER_MAJOR);
constexpr const char* kCublasLtSoname = "libcublasLt.so." RG_LAZY_STRING(CUBLAS_VER_MAJOR);
constexpr const char* kNcclSoname = "libnccl.so." RG_LAZY_STRING(NCCL_MAJOR);

}  // namespace
}  // namespace rg::cuda

// extern "C" RET NAME PARAMS: on first call resolves NAME in SONAME, then forwards ARGS.
#define RG_LAZY(soname, ret, name, params, args)                                            \
  extern "C" ret name params {                                                              \
    using Real = ret(*) params;                                                             \
    static const Real real =                                                                \
        reinterpret_cast<Real>(::rg::cuda::load_library_symbol(::rg::cuda::soname, #name)); \
    return real args;                                                                       \
  }

// ---- cuBLAS (kernels/cuda/runtime.cpp, matmul.cu; bench/kernels.cpp)
RG_LAZY(kCublasSoname, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
RG_LAZY(kCublasSoname, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))
RG_LAZY(kCublasSoname, cublasStatus_t, cublasSetStream_v2,
        (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
RG_LAZY(kCublasSoname, cublasStatus_t, cublasSetWorkspace_v2,
        (cublasHandle_t handle, void* workspace, size_t workspace_bytes),
        (handle, workspace, workspace_bytes))
RG_LAZY(kCublasSoname, const char*, cublasGetStatusString, (cublasStatus_t status), (status))
RG_LAZY(kCublasSoname, cublasStatus_t, cublasGemmEx,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
         int k, const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
         cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
         cublasComputeType_t compute_type, cublasGemmAlgo_t algo),
        (handle, transa, transb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c, c_type,
         ldc, compute_type, algo))
RG_LAZY(kCublasSoname, cublasStatus_t, cublasGemmStridedBatchedEx,
        (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
         int k, const void* alpha, const void* a, cudaDataType a_type, int lda,
         long long int stride_a, const void* b, cudaDataType b_type, int ldb,
         long long int stride_b, const void* beta, void* c, cudaDataType c_type, int ldc,
         long long int stride_c, int batch_count, cublasComputeType_t compute_type,
         cublasGemmAlgo_t algo),
        (handle, transa, transb, m, n, k, alpha, a, a_type, lda, stride_a, b, b_type, ldb, stride_b,
         beta, c, c_type, ldc, stride_c, batch_count, compute_type, algo))

// ---- cuBLASLt (kernels/cuda/runtime.cpp, matmul.cu: linear with the bias epilogue)
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulDescCreate,
        (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute_type, cudaDataType_t scale_type),
        (desc, compute_type, scale_type))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc),
        (desc))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulDescSetAttribute,
        (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
         size_t size),
        (desc, attr, buf, size))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatrixLayoutCreate,
        (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
         int64_t ld),
        (layout, type, rows, cols, ld))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatrixLayoutDestroy,
        (cublasLtMatrixLayout_t layout), (layout))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulPreferenceCreate,
        (cublasLtMatmulPreference_t * pref), (pref))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulPreferenceDestroy,
        (cublasLtMatmulPreference_t pref), (pref))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
        (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
         const void* buf, size_t size),
        (pref, attr, buf, size))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
         cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc,
         cublasLtMatrixLayout_t d_desc, cublasLtMatmulPreference_t pref, int requested,
         cublasLtMatmulHeuristicResult_t results[], int* returned),
        (handle, desc, a_desc, b_desc, c_desc, d_desc, pref, requested, results, returned))
RG_LAZY(kCublasLtSoname, cublasStatus_t, cublasLtMatmul,
        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
         cublasLtMatrixLayout_t a_desc, const void* b, cublasLtMatrixLayout_t b_desc,
         const void* beta, const void* c, cublasLtMatrixLayout_t c_desc, void* d,
         cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
         size_t workspace_bytes, cudaStream_t stream),
        (handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
         workspace_bytes, stream))

// ---- NCCL (dist/nccl_group.cpp)
RG_LAZY(kNcclSoname, ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id), (id))
RG_LAZY(kNcclSoname, ncclResult_t, ncclCommInitRankConfig,
        (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config),
        (comm, nranks, id, rank, config))
RG_LAZY(kNcclSoname, ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm))
RG_LAZY(kNcclSoname, ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm))
RG_LAZY(kNcclSoname, ncclResult_t, ncclCommGetAsyncError,
        (ncclComm_t comm, ncclResult_t* async_error), (comm, async_error))
RG_LAZY(kNcclSoname, const char*, ncclGetErrorString, (ncclResult_t result), (result))
RG_LAZY(kNcclSoname, ncclResult_t, ncclAllReduce,
        (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
         ncclComm_t comm, cudaStream_t stream),
        (send, recv, count, type, op, comm, stream))
RG_LAZY(kNcclSoname, ncclResult_t, ncclSend,
        (const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
         cudaStream_t stream),
        (send, count, type, peer, comm, stream))
RG_LAZY(kNcclSoname, ncclResult_t, ncclRecv,
        (void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
         cudaStream_t stream),
        (recv, count, type, peer, comm, stream))
RG_LAZY(kNcclSoname, ncclResult_t, ncclGroupStart, (), ())
RG_LAZY(kNcclSoname, ncclResult_t, ncclGroupEnd, (), ())
