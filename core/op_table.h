// THE op table: the single place that names every kernel-level op. Enums, name tables and
// the per-device KernelTable below are generated from these lists; nothing is kept in
// sync by hand. To add an op, see docs/adding-an-op.md.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace rg {

// ---- THE elementwise table. One row per op; everything else is generated from it: the
// UnaryOp/BinaryOp enums and names below, the scalar functors (core/elementwise_scalar.h)
// that the cpu and cuda/sim kernels instantiate per op, the public functions rg::<name>
// and their derivatives (ops/elementwise.cpp), the tests and the op list in the docs.
//   name      UnaryOp::name / BinaryOp::name, and the public op rg::name(x) / rg::name(a, b)
//   rule      the output dtype (DTypeRule below): same | floating | boolean
//   forward   y = f(x), or y = f(a, b)
//   gradient  dL/dx from g = dL/dy, the input x and the output y; binary rows give dL/da and
//             dL/db from g, a, b and y. A gradient that is just `g` passes g through with
//             no kernel. Rows with a bool output have no gradient (write 0).
// Expressions are C++ in the compute type T: float for f32 and bf16, double for f64, the
// integer type for integers (only `same` and `boolean` rows see integers). Write constants
// as T(0.5): a bare 0.5 would compute in double, and a static_assert rejects it. The math
// functions (exp, log, erf, sign_of, gelu_tanh, ...) are those of core/elementwise_scalar.h,
// usable on host and device.
// clang-format off
#define RG_UNARY_OPS(X)                                                             \
  /* name         rule      forward                    gradient */                  \
  X(neg,          same,     -x,                        -g)                          \
  X(exp,          floating, exp(x),                    g * y)                       \
  X(log,          floating, log(x),                    g / x)                       \
  X(sqrt,         floating, sqrt(x),                   g * T(0.5) / y)              \
  X(rsqrt,        floating, T(1) / sqrt(x),            g * T(-0.5) * (y * (y * y))) \
  X(abs,          same,     x < T(0) ? -x : x,         g * sign_of(x))              \
  X(sign,         same,     sign_of(x),                g * T(0))                    \
  X(tanh,         floating, tanh(x),                   g * (T(1) - y * y))          \
  X(sigmoid,      floating, sigmoid_of(x),             g * y * (T(1) - y))          \
  X(relu,         same,     x > T(0) ? x : T(0),       x > T(0) ? g : T(0))         \
  X(gelu,         floating, gelu_erf(x),               g * gelu_erf_grad(x))        \
  X(gelu_tanh,    floating, gelu_tanh(x),              g * gelu_tanh_grad(x))       \
  X(silu,         floating, x * sigmoid_of(x),         g * (sigmoid_of(x) + y * (T(1) - sigmoid_of(x)))) \
  X(sin,          floating, sin(x),                    g * cos(x))                  \
  X(cos,          floating, cos(x),                    -(g * sin(x)))               \
  X(square,       same,     x * x,                     g * T(2) * x)                \
  X(reciprocal,   floating, T(1) / x,                  -(g * (y * y)))              \
  X(logical_not,  boolean,  x == T(0),                 0)

// Binary rows broadcast (NumPy rules); the op layer promotes both inputs to one dtype first.
#define RG_BINARY_OPS(X)                                                                                 \
  /* name     rule      forward                          gradient a                  gradient b */       \
  X(add,      same,     a + b,                           g,                          g)                  \
  X(sub,      same,     a - b,                           g,                          -g)                 \
  X(mul,      same,     a * b,                           g * b,                      g * a)              \
  X(div,      floating, a / b,                           g / b,                      -(g * a / (b * b))) \
  X(pow,      floating, pow(a, b),                       g * (b * pow(a, b - T(1))), g * (y * log(a)))   \
  X(maximum,  same,     is_nan(a) ? a : (a > b ? a : b), a >= b ? g : T(0),          a >= b ? T(0) : g)  \
  X(minimum,  same,     is_nan(a) ? a : (a < b ? a : b), a <= b ? g : T(0),          a <= b ? T(0) : g)  \
  X(eq,       boolean,  a == b,                          0,                          0)                  \
  X(ne,       boolean,  a != b,                          0,                          0)                  \
  X(lt,       boolean,  a < b,                           0,                          0)                  \
  X(le,       boolean,  a <= b,                          0,                          0)                  \
  X(gt,       boolean,  a > b,                           0,                          0)                  \
  X(ge,       boolean,  a >= b,                          0,                          0)
// clang-format on

// The output dtype of an elementwise op, from its input dtype (binary: the promoted one).
enum class DTypeRule : uint8_t {
  same,      // the input dtype; bool inputs: binary ops compute in int64, unary ops reject them
  floating,  // integer and bool inputs are computed as float32 (true division, exp of an int)
  boolean,   // bool (comparisons, logical_not); inputs of any dtype, compared as they are
};
// Which input dtypes reach a kernel under each rule (the op layer converts the others).
constexpr bool rule_takes_integers(DTypeRule r) { return r != DTypeRule::floating; }
constexpr bool rule_takes_bool(DTypeRule r) { return r == DTypeRule::boolean; }
const char* rule_name(DTypeRule r);

enum class UnaryOp : uint8_t {
#define RG_ENUM(name, ...) name,
  RG_UNARY_OPS(RG_ENUM)
};
enum class BinaryOp : uint8_t { RG_BINARY_OPS(RG_ENUM) };
#undef RG_ENUM

// One row of the table as data (the expressions as text, for messages, tests and docs).
struct ElementwiseInfo {
  const char* name;
  DTypeRule rule;
  const char* forward;
  const char* gradient[2];  // binary: for a and for b; unary: gradient[0]
  bool gradient_is_g[2];    // the gradient is g itself: no kernel needed
  bool differentiable() const { return rule != DTypeRule::boolean; }
};
const ElementwiseInfo& info(UnaryOp op);
const ElementwiseInfo& info(BinaryOp op);
#define RG_COUNT(...) +1
inline constexpr int kNumUnaryOps = 0 RG_UNARY_OPS(RG_COUNT);
inline constexpr int kNumBinaryOps = 0 RG_BINARY_OPS(RG_COUNT);
#undef RG_COUNT

// ---- THE reduction table: one row per reduction over a set of dims. Generated from it: the
// ReduceOp enum and names, the scalar functors (core/reduce_scalar.h) that the cpu and
// cuda/sim reduce kernels instantiate per op, the public functions rg::<name> and their
// derivatives (ops/ops.h, ops/reduce.cpp), and the op list in docs/adding-an-op.md.
//   name      ReduceOp::name and the public op rg::name(x, dims = {}, keepdim = false);
//             `index` rows: rg::name(x, dim, keepdim = false)
//   rule      the output dtype (ReduceRule below): widen | floating | same | index
//   kind      fold: `combine` is the new accumulator from a (so far) and b (the next element);
//             it accumulates in V = double (int64 for integer inputs), in any order.
//             select: `combine` says whether b beats a; the kernel keeps the winner and its
//             index, a NaN beats any number, ties keep the first. V = the compute type.
//   identity  the accumulator before the first element, in V (a fold's empty result)
//   finish    the output from the accumulator v, the winner's index i and the count n
//   gradient  dL/dx, rg ops on g = dL/dy and y (both keepdim-shaped: they broadcast against
//             x), the input x and the count n (a double); broadcast(t) expands t to x's
//             shape, the other helpers are ops/reduce.cpp's. `index` rows: no_gradient().
// Scalar expressions (identity, combine, finish) are C++ in V, for host and device; the
// helpers lowest, highest and mul_wrap are core/reduce_scalar.h's.
// clang-format off
#define RG_REDUCE_OPS(X)                                                                                   \
  /* name   rule      kind    identity       combine         finish    gradient */                         \
  X(sum,    widen,    fold,   V(0),          a + b,          v,        broadcast(g))                       \
  X(mean,   floating, fold,   V(0),          a + b,          v / V(n), broadcast(g / n))                   \
  X(amax,   same,     select, lowest<V>(),   b > a,          v,        share_among_ties(g, x, y))          \
  X(amin,   same,     select, highest<V>(),  b < a,          v,        share_among_ties(g, x, y))          \
  X(argmax, index,    select, lowest<V>(),   b > a,          i,        no_gradient())                      \
  X(argmin, index,    select, highest<V>(),  b < a,          i,        no_gradient())                      \
  X(prod,   widen,    fold,   V(1),          mul_wrap(a, b), v,        g * product_of_others(x))
// clang-format on

// The output dtype of a reduction, from its input dtype.
enum class ReduceRule : uint8_t {
  widen,     // the input dtype; the op layer computes integer and bool inputs as int64
  floating,  // floating inputs only (the op rejects others), output in their dtype
  same,      // the input dtype; bool inputs are rejected
  index,     // int64: the winner's flat row-major index in the reduced sub-space
};
enum class ReduceKind : uint8_t { fold, select };
const char* rule_name(ReduceRule r);
const char* kind_name(ReduceKind k);

enum class ReduceOp : uint8_t {
#define RG_ENUM(name, ...) name,
  RG_REDUCE_OPS(RG_ENUM)
#undef RG_ENUM
};

// One row of the reduction table as data (the expressions as text, for messages and docs).
struct ReduceInfo {
  const char* name;
  ReduceRule rule;
  ReduceKind kind;
  const char* identity;
  const char* combine;
  const char* finish;
  const char* gradient;
  bool differentiable() const { return rule != ReduceRule::index; }
  // Whether an empty reduced dim has a result (a fold's identity); select rows need elements.
  bool allows_empty() const { return kind == ReduceKind::fold; }
};
const ReduceInfo& info(ReduceOp op);
#define RG_COUNT(...) +1
inline constexpr int kNumReduceOps = 0 RG_REDUCE_OPS(RG_COUNT);
#undef RG_COUNT

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);

enum class RandomKind : uint8_t { uniform, normal };

// Arguments of the fused AdamW kernels (adamw: one parameter; adamw_multi: a list sharing
// them, so one step count and one weight decay per call).
struct AdamWArgs {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;  // 1-based, for bias correction
};
// One parameter's tensors for adamw_multi: all four contiguous, of param's shape and dtype.
struct AdamWTensors {
  Tensor param, grad, exp_avg, exp_avg_sq;
};

// Kernel signatures. Contract for every kernel: the op layer (ops/) has validated shapes,
// dtypes and devices, allocated the outputs, and broadcast inputs to the output shape with
// expand views (stride 0). Inputs and outputs may be non-contiguous unless stated.
//   name, return type, parameters
// clang-format off
#define RG_KERNELS(X)                                                                         \
  X(unary, void, (UnaryOp op, const Tensor& out, const Tensor& in))                           \
  /* grad_in = the row's gradient of (grad_out, in, out); all four of in's shape and dtype */  \
  X(unary_backward, void, (UnaryOp op, const Tensor& grad_in, const Tensor& grad_out,         \
                           const Tensor& in, const Tensor& out))                              \
  X(binary, void, (BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b))         \
  /* grad_in = the row's gradient for input `which` (0: a, 1: b) of (grad_out, a, b, out), */ \
  /* every operand already broadcast to out's shape, all of out's dtype */                    \
  X(binary_backward, void, (BinaryOp op, int which, const Tensor& grad_in,                    \
                            const Tensor& grad_out, const Tensor& a, const Tensor& b,         \
                            const Tensor& out))                                               \
  /* out = cond ? a : b, all already broadcast to out's shape */                              \
  X(where, void, (const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b))    \
  /* strided copy with dtype conversion, same device */                                       \
  X(copy, void, (const Tensor& out, const Tensor& in))                                        \
  X(fill, void, (const Tensor& out, double value))                                            \
  /* out: in's shape with 1 at each reduced dim (keepdim); dims sorted, unique, non-empty, each of size > 1 */          \
  X(reduce, void, (ReduceOp op, const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims)) \
  /* out[b] = a[b] @ b[b]; a [B,M,K], b [B,K,N], out [B,M,N] contiguous; a/b any strides */  \
  X(matmul, void, (const Tensor& out, const Tensor& a, const Tensor& b))                      \
  /* out [M,N] = x [M,K] @ weight [N,K]^T + bias [N] (contiguous; undefined: no bias), */   \
  /* out contiguous, x and weight any strides; the bias is added in the GEMM's epilogue */    \
  X(linear, void, (const Tensor& out, const Tensor& x, const Tensor& weight,                 \
                   const Tensor& bias))                                                       \
  /* linear's weight gradient over sequences, f32 and f64, all contiguous (optional: ops */   \
  /* compose matmul and sum where a device lacks it): dweight [N,K] = sum over b of */         \
  /* dy[b]^T @ x[b], dy [B,T,N], x [B,T,K]; each sequence's product in the dtype, their */     \
  /* sum over b in double */                                                                  \
  X(linear_weight_grad, void, (const Tensor& dweight, const Tensor& dy, const Tensor& x))     \
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
  /* attention of q [B,T,D], k [B,S,D], v [B,S,Dv] (contiguous; causal: key j <= query i): */ \
  /* out [B,T,Dv], lse [B,T] the log-sum-exp of each row's scaled scores (f32; f64 for f64) */ \
  X(attention, void, (const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,   \
                      const Tensor& v, bool causal, double scale))                             \
  /* dq, dk, dv from dout and the forward's q, k, v, out, lse (recomputes the probabilities) */ \
  X(attention_backward, void, (const Tensor& dq, const Tensor& dk, const Tensor& dv,           \
                               const Tensor& dout, const Tensor& q, const Tensor& k,           \
                               const Tensor& v, const Tensor& out, const Tensor& lse,          \
                               bool causal, double scale))                                     \
  /* Philox: element i (row-major) of out gets the number for counter offset + i */          \
  X(random, void, (const Tensor& out, RandomKind kind, uint64_t seed, uint64_t offset))       \
  /* fused AdamW update of one parameter; param, grad, exp_avg, exp_avg_sq contiguous */     \
  X(adamw, void, (const Tensor& param, const Tensor& grad, const Tensor& exp_avg,             \
                  const Tensor& exp_avg_sq, const AdamWArgs& args))                            \
  /* the adamw update of every set in one pass, all of one dtype (f32/f64) and device; */    \
  /* each gradient element is read as T(g * T(grad_scale)) (mul_'s rounding; 1: as is) */     \
  X(adamw_multi, void, (const std::vector<AdamWTensors>& sets, const AdamWArgs& args,         \
                        double grad_scale))                                                   \
  /* adamw_multi reading its scalars, when it runs, from `scalars`: device memory holding */ \
  /* an AdamWScalars<T> (kernels/adamw_scalars.h), so a graph replay uses what was written */ \
  /* there before it (PyTorch's capturable=True; sim and cuda only) */                         \
  X(adamw_multi_from_device, void, (const std::vector<AdamWTensors>& sets,                   \
                                    const void* scalars))                                    \
  /* out [N] f64 contiguous: out[i] = sum of squares of tensors[i] (contiguous, all of one */ \
  /* floating dtype and out's device), squares and sums in double, split by shape only */    \
  X(sum_squares_multi, void, (const Tensor& out, const std::vector<Tensor>& tensors))      \
  /* every tensor (contiguous, one floating dtype and device) x = x * T(scale), in place, */ \
  /* rounded as x.mul_(scale) */                                                              \
  X(scale_multi, void, (const std::vector<Tensor>& tensors, double scale))                   \
  /* Indexing along one dim (0 <= dim < rank); tensors of one rank, any strides, index */     \
  /* int64 (expanded views allowed); an index outside [0, size of dim) throws, naming it. */  \
  /* out[p] = in[p with coordinate dim := index[p]]; out, index of one shape, in of out's */  \
  /* dtype and each other dim at least index's */                                            \
  X(gather, void, (const Tensor& out, const Tensor& in, const Tensor& index, int64_t dim))    \
  /* out[p with coordinate dim := index[p]] = src[p] (accumulate: +=) for each p of index's */ \
  /* shape, in order along dim (a repeated index: the last write wins, or the sum in order); */ \
  /* src index's shape and out's dtype (accumulate: numeric), out's other dims >= index's */  \
  X(index_put, void, (const Tensor& out, const Tensor& index, const Tensor& src, int64_t dim, \
                      bool accumulate))                                                       \
  /* out = running sums of in along dim (reverse: from the end); one shape and numeric */     \
  /* dtype, any strides; each line summed in order in double (int64 for integers) */         \
  X(cumsum, void, (const Tensor& out, const Tensor& in, int64_t dim, bool reverse))           \
  /* values = in sorted along dim, indices (int64) their positions in in; stable (equal */    \
  /* values keep their order), NaN above every number; values in's dtype, any strides */      \
  X(sort, void, (const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,  \
                 bool descending))
// clang-format on

// Kernels a device may lack: the ops compose other kernels there instead.
#define RG_OPTIONAL_KERNELS(X) X(linear_weight_grad)
// Kernels only the gpu devices (sim, cuda) have: the cpu has no graphs to capture.
#define RG_GPU_ONLY_KERNELS(X) X(adamw_multi_from_device)

// One table per device type; a null entry means the device lacks that kernel.
struct KernelTable {
#define RG_KERNEL_FIELD(name, ret, params) ret(*name) params = nullptr;
  RG_KERNELS(RG_KERNEL_FIELD)
#undef RG_KERNEL_FIELD
};

// The storage of the table of `type`, as it is: backends fill it when they register.
// Callers of kernels use kernel_table() or RG_KERNEL (kernels/builtin.h), which register the
// built-in backends first.
KernelTable& unchecked_kernel_table(DeviceType type);

}  // namespace rg
