// matmul: out[b] = a[b] @ b[b]; a [B,M,K], b [B,K,N] any strides (batch stride may be 0),
// out [B,M,N] contiguous; f32 (TF32 when gpu::set_allow_tf32), bf16 with f32 accumulation,
// f64. One cublasGemmStridedBatchedEx call: a row-major product is the column-major
// product of the transposes, out^T = b^T a^T, so b is cuBLAS's "A" and a its "B".
// A slice whose rows or columns are contiguous is passed in place with a transpose flag
// and leading dimension; anything else is copied to contiguous first. On sim the calls are
// served by the Eigen shim in kernels/sim/cublas_shim.h: the plumbing is the same code.
// linear: out [M,N] = x [M,K] @ weight [N,K]^T + bias [N], one cublasLtMatmul with the BIAS
// epilogue, so the bias costs no pass over out. Column-major that is out^T [N,M] = W x^T, and
// cuBLASLt's bias has the length of D's (column-major) rows: N, one value per row-major
// column, as linear needs. f64 (cuBLASLt's epilogues are not documented for 64F compute), an
// algorithm cuBLASLt does not offer, and K = 0 write the bias into out and run the cuBLAS
// GEMM with beta = 1 instead: the same result with one extra write of out. Its descriptors
// and algorithm are cached per shape, dtype, alignment and epilogue (lt_plan_cache.cuh).
#include "kernels/contracts.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/lt_plan_cache.cuh"
#include "kernels/linear_shapes.h"
#if RG_SIM
#include "kernels/sim/cublas_shim.h"
#else
#include <cublasLt.h>
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

// f64 in f64; f32 in f32, or TF32 when gpu::set_allow_tf32(true); bf16 accumulates in f32.
cublasComputeType_t compute_type(DType t) {
  if (t == DType::f64) return CUBLAS_COMPUTE_64F;
  return t == DType::f32 && gpu::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// out[b] = a[b] @ b[b] + beta * out[b] (beta 0 or 1) by cublasGemmStridedBatchedEx; shapes as
// run_matmul's, k > 0.
void gemm_by_cublas(const Tensor& out, const Tensor& a_in, const Tensor& b_in, double beta_value) {
  int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a_in.size(2);
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
  cublasComputeType_t compute = compute_type(out.dtype());
  float alpha32 = 1, beta32 = float(beta_value);
  double alpha64 = 1, beta64 = beta_value;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = f64 ? static_cast<const void*>(&beta64) : &beta32;
#if RG_SIM
  cublasHandle_t handle = stream_for(out);  // the shim's handle is the stream it runs on
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

void run_matmul(const Tensor& out, const Tensor& a_in, const Tensor& b_in) {
  RG_KERNEL_CONTRACT(check_matmul(out, a_in, b_in));
  if (out.numel() == 0) return;
  if (a_in.size(2) == 0) {
    kernel_table(RG_BACKEND_DEVICE).fill(out, 0.0);
    return;
  }
  gemm_by_cublas(out, a_in, b_in, 0.0);
}

// ---- linear

// The largest power of two (up to 256) dividing the address: cuBLASLt's heuristic assumes
// 256-byte aligned operands unless told less, and a view may start anywhere.
uint32_t alignment_of(const void* p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p) | 256;
  return uint32_t(v & (~v + 1));
}

// The column-major [rows, cols] matrix cuBLAS reads for an operand whose op(X) is
// [op_rows, op_cols].
void make_layout(cublasLtMatrixLayout_t* layout, cudaDataType type, const Operand& o,
                 int64_t op_rows, int64_t op_cols) {
  bool n = o.op == CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout, type, uint64_t(n ? op_rows : op_cols),
                                          uint64_t(n ? op_cols : op_rows), o.ld));
}

void set_preferences(LtCall& call, const LtPlanKey& key) {
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&call.pref));
  uint64_t bytes = uint64_t(key.workspace_bytes);
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      call.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes)));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, int64_t> aligned[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d}};
  for (const auto& [attr, value] : aligned) {
    uint32_t alignment = uint32_t(value);
    CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(call.pref, attr, &alignment, sizeof(alignment)));
  }
}

// The descriptors of `key` and cuBLASLt's first choice of algorithm for them, if any.
std::shared_ptr<LtPlan> build_plan(const LtPlanKey& key, cublasLtHandle_t handle) {
  auto plan = std::make_shared<LtPlan>();
  LtCall& call = plan->call;
  CUBLAS_CHECK(
      cublasLtMatmulDescCreate(&call.desc, cublasComputeType_t(key.compute_type), CUDA_R_32F));
  const int32_t transa = int32_t(key.transa), transb = int32_t(key.transb);
  const uint32_t epilogue = uint32_t(key.epilogue);
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa,
                                              sizeof(transa)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb,
                                              sizeof(transb)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof(epilogue)));
  // column-major: D = out^T [n, m] = op(wt)^T-view [n, k] * op(x)^T-view [k, m]
  const auto type = cudaDataType(key.data_type);
  make_layout(&call.a, type, {true, cublasOperation_t(key.transa), key.lda}, key.n, key.k);
  make_layout(&call.b, type, {true, cublasOperation_t(key.transb), key.ldb}, key.k, key.m);
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.d, type, uint64_t(key.n), uint64_t(key.m), key.n));
  set_preferences(call, key);
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  plan->has_algorithm =
      cublasLtMatmulAlgoGetHeuristic(handle, call.desc, call.a, call.b, call.d, call.d, call.pref,
                                     1, &found, &count) == CUBLAS_STATUS_SUCCESS &&
      count > 0 && found.state == CUBLAS_STATUS_SUCCESS;
  plan->algo = found.algo;
  return plan;
}

// Plans by key, shared by every thread and device of this backend (the key names the device).
LtPlanCache& plan_cache() {
  static LtPlanCache* cache = new LtPlanCache(1024);  // see lt_plan_cache.cuh: never destroyed
  return *cache;
}

// out [m,n] = x [m,k] @ wt [k,n] (+ bias) as one cublasLtMatmul (f32, bf16); false when
// cuBLASLt offers no algorithm for it (nothing written then).
bool linear_by_cublaslt(const Tensor& out, const Tensor& x, const Operand& ox, const Tensor& wt,
                        const Operand& ow, const Tensor& bias) {
#if RG_SIM
  cublasLtHandle_t handle;  // the shim queues its GEMM on a delayed or capturing stream
  CUBLAS_CHECK(cublasLtCreate(&handle));
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
#else
  cuda::BlasLt lt = cuda::cublaslt_for(out.device().index, stream_for(out));
  auto handle = static_cast<cublasLtHandle_t>(lt.handle);
  void* workspace = lt.workspace;
  size_t workspace_bytes = lt.workspace_bytes;
#endif
  const void* bias_ptr = bias.defined() ? bias.data_ptr() : nullptr;
  const LtPlanKey key{out.device().index,
                      out.size(0),
                      out.size(1),
                      x.size(1),
                      data_type(out.dtype()),
                      compute_type(out.dtype()),
                      ow.op,
                      ox.op,
                      ow.ld,
                      ox.ld,
                      bias_ptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT,
                      alignment_of(wt.data_ptr()),
                      alignment_of(x.data_ptr()),
                      alignment_of(out.data_ptr()),
                      bias_ptr ? alignment_of(bias_ptr) : 0,
                      int64_t(workspace_bytes)};
  std::shared_ptr<LtPlan> plan = plan_cache().get(key, [&] { return build_plan(key, handle); });
  if (!plan->has_algorithm) return false;
  const float alpha = 1, beta = 0;
  std::lock_guard<std::mutex> lock(plan->launch);
  if (bias_ptr)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->call.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &bias_ptr, sizeof(bias_ptr)));
  CUBLAS_CHECK(cublasLtMatmul(handle, plan->call.desc, &alpha, wt.data_ptr(), plan->call.a,
                              x.data_ptr(), plan->call.b, &beta, out.data_ptr(), plan->call.d,
                              out.data_ptr(), plan->call.d, &plan->algo, workspace, workspace_bytes,
                              stream_for(out)));
  return true;
}

// The fallback: out = the broadcast bias (or 0), then out += x @ wt by cuBLAS (beta = 1).
void linear_by_prefill(const Tensor& out, const Tensor& x, const Tensor& wt, const Tensor& bias) {
  const int64_t m = out.size(0), n = out.size(1), k = x.size(1);
  if (bias.defined())
    kernel_table(RG_BACKEND_DEVICE)
        .copy(out, make_view(bias, {m, n}, {0, bias.stride(0)}, bias.offset()));
  else
    kernel_table(RG_BACKEND_DEVICE).fill(out, 0.0);
  if (k == 0) return;
  gemm_by_cublas(make_view(out, {1, m, n}, {m * n, n, 1}, out.offset()),
                 make_view(x, {1, m, k}, {0, x.stride(0), x.stride(1)}, x.offset()),
                 make_view(wt, {1, k, n}, {0, wt.stride(0), wt.stride(1)}, wt.offset()), 1.0);
}

void run_linear(const Tensor& out, const Tensor& x_in, const Tensor& weight,
                const Tensor& bias_in) {
  debug_check_linear_shapes(out, x_in, weight, bias_in);
  const int64_t m = out.size(0), n = out.size(1), k = x_in.size(1);
  if (out.numel() == 0) return;
  RG_CHECK(m < (int64_t(1) << 31) && n < (int64_t(1) << 31) && k < (int64_t(1) << 31),
           "linear: dims over 2^31 are not supported");
  // weight^T [k, n] by stride; the epilogue reads the bias packed and 16-byte aligned.
  Tensor x = x_in,
         wt = make_view(weight, {k, n}, {weight.stride(1), weight.stride(0)}, weight.offset());
  Tensor bias = bias_in;
  if (bias.defined() && (bias.stride(0) != 1 || alignment_of(bias.data_ptr()) < 16))
    bias = contiguous_copy(bias);
  if (k > 0 && out.dtype() != DType::f64) {
    Operand ox = operand_of(m, k, x.stride(0), x.stride(1));
    if (!ox.usable) x = contiguous_copy(x), ox = operand_of(m, k, x.stride(0), x.stride(1));
    Operand ow = operand_of(k, n, wt.stride(0), wt.stride(1));
    if (!ow.usable) wt = contiguous_copy(wt), ow = operand_of(k, n, wt.stride(0), wt.stride(1));
    if (linear_by_cublaslt(out, x, ox, wt, ow, bias)) return;
  }
  linear_by_prefill(out, x, wt, bias);
}

}  // namespace

void register_matmul_kernels(KernelTable& k) {
  k.matmul = run_matmul;
  k.linear = run_linear;
}
}  // namespace rg::RG_BACKEND
