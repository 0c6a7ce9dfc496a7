// THE op table: the single place that names every kernel-level op. Enums, name tables and
// the per-device KernelTable below are generated from these lists; nothing is kept in
// sync by hand. To add an op, see docs/adding-an-op.md.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace rg {

// Elementwise unary: out = f(in).
#define RG_UNARY_OPS(X) \
  X(neg) X(exp) X(log) X(sqrt) X(rsqrt) X(abs) X(sign) X(tanh) X(sigmoid) X(relu) X(gelu) \
  X(sin) X(cos) X(square) X(reciprocal) X(logical_not)

// Elementwise binary with broadcasting: out = f(a, b). Comparisons write bool.
// gelu_backward(grad, x), relu_backward(grad, x) and tanh_backward(grad, y) are the fused
// derivative kernels of the activations.
#define RG_BINARY_OPS(X) \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) \
  X(eq) X(ne) X(lt) X(le) X(gt) X(ge) \
  X(gelu_backward) X(relu_backward) X(tanh_backward) X(sigmoid_backward)

// Reductions over a set of dims.
#define RG_REDUCE_OPS(X) X(sum) X(mean) X(max) X(min) X(argmax) X(argmin)

enum class UnaryOp : uint8_t {
#define RG_ENUM(name) name,
  RG_UNARY_OPS(RG_ENUM)
};
enum class BinaryOp : uint8_t { RG_BINARY_OPS(RG_ENUM) };
enum class ReduceOp : uint8_t { RG_REDUCE_OPS(RG_ENUM) };
#undef RG_ENUM

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);
bool is_comparison(BinaryOp op);  // writes bool

enum class RandomKind : uint8_t { uniform, normal };

// Arguments of the fused AdamW kernel (one call per parameter tensor).
struct AdamWArgs {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // 1-based, for bias correction
};

// Kernel signatures. Contract for every kernel: the op layer (ops/) has validated shapes,
// dtypes and devices, allocated the outputs, and broadcast inputs to the output shape with
// expand views (stride 0). Inputs and outputs may be non-contiguous unless stated.
//   name, return type, parameters
#define RG_KERNELS(X)                                                                         \
  X(unary, void, (UnaryOp op, const Tensor& out, const Tensor& in))                           \
  X(binary, void, (BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b))         \
  /* out = cond ? a : b, all already broadcast to out's shape */                              \
  X(where, void, (const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b))    \
  /* strided copy with dtype conversion, same device */                                       \
  X(copy, void, (const Tensor& out, const Tensor& in))                                        \
  X(fill, void, (const Tensor& out, double value))                                            \
  /* out: in's shape with 1 at each reduced dim (keepdim); dims sorted, unique, non-empty, each of size > 1 */          \
  X(reduce, void, (ReduceOp op, const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims)) \
  /* out[b] = a[b] @ b[b]; a [B,M,K], b [B,K,N], out [B,M,N] contiguous; a/b any strides */  \
  X(matmul, void, (const Tensor& out, const Tensor& a, const Tensor& b))                      \
  /* softmax or log_softmax along `dim`; in and out contiguous */                             \
  X(softmax, void, (const Tensor& out, const Tensor& in, int64_t dim, bool log))              \
  /* grad_in from grad_out and the forward output y */                                        \
  X(softmax_backward, void, (const Tensor& grad_in, const Tensor& grad_out, const Tensor& y,  \
                             int64_t dim, bool log))                                          \
  /* over the last dim; x [N,C] contiguous, mean/rstd [N] f32 (f64 for f64 x) */              \
  X(layernorm, void, (const Tensor& out, const Tensor& mean, const Tensor& rstd,              \
                      const Tensor& x, const Tensor& weight, const Tensor& bias, double eps)) \
  /* dx = ...; dweight/dbias written (=), undefined weight means no affine */                 \
  X(layernorm_backward, void, (const Tensor& dx, const Tensor& dweight, const Tensor& dbias,  \
                               const Tensor& dy, const Tensor& x, const Tensor& mean,         \
                               const Tensor& rstd, const Tensor& weight))                     \
  /* out [N,D] = weight [V,D] rows at indices [N] (i64); index out of range throws */        \
  X(embedding, void, (const Tensor& out, const Tensor& weight, const Tensor& indices))        \
  /* grad_weight [V,D] (zeroed by caller) += grad_out rows scattered to indices */           \
  X(embedding_backward, void, (const Tensor& grad_weight, const Tensor& grad_out,             \
                               const Tensor& indices))                                        \
  /* loss [N] = logsumexp(logits[n]) - logits[n, target[n]], 0 where target == ignore */     \
  X(cross_entropy, void, (const Tensor& loss, const Tensor& logits, const Tensor& targets,    \
                          int64_t ignore_index))                                              \
  /* dlogits [N,C] = (softmax(logits) - onehot(target)) * dloss[n]; 0 rows for ignored */   \
  X(cross_entropy_backward, void, (const Tensor& dlogits, const Tensor& logits,               \
                                   const Tensor& targets, const Tensor& dloss,                \
                                   int64_t ignore_index))                                     \
  /* Philox: element i (row-major) of out gets the number for counter offset + i */          \
  X(random, void, (const Tensor& out, RandomKind kind, uint64_t seed, uint64_t offset))       \
  /* fused AdamW update of one parameter; param, grad, exp_avg, exp_avg_sq contiguous */     \
  X(adamw, void, (const Tensor& param, const Tensor& grad, const Tensor& exp_avg,             \
                  const Tensor& exp_avg_sq, const AdamWArgs& args))

// One table per device type; a null entry means the device lacks that kernel.
struct KernelTable {
#define RG_KERNEL_FIELD(name, ret, params) ret(*name) params = nullptr;
  RG_KERNELS(RG_KERNEL_FIELD)
#undef RG_KERNEL_FIELD
};

// The table of `type`, with the built-in backends registered (kernels/builtin.h).
KernelTable& kernel_table(DeviceType type);
// The same table without triggering registration; for registration functions only.
KernelTable& unchecked_kernel_table(DeviceType type);
// The table to call for a tensor on `device`; throws naming `op` if the kernel is missing.
#define RG_KERNEL(device, name)                                                          \
  (::rg::kernel_table((device).type).name                                                \
       ? ::rg::kernel_table((device).type).name                                          \
       : (RG_FAIL(#name ": no kernel for device ", (device).str()), nullptr))

}  // namespace rg
