// The public ops of ringgrad. Each is defined in ops/<family>.cpp together with its
// derivative: the forward validates its inputs (throwing rg::Error that names the op and
// the shapes), allocates outputs, calls the device's kernel from the op table, and — when
// grad mode is on and an input requires grad — records a node whose closure is the
// backward. Every op accepts non-contiguous inputs.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/op_table.h"
#include "core/tensor.h"

namespace rg {

// ---- factories (ops/factory.cpp)
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = kCPU);
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = kCPU);
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = kCPU);
Tensor arange(int64_t end, DType dtype = DType::i64, Device device = kCPU);
Tensor arange(double start, double end, double step = 1, DType dtype = DType::f32,
              Device device = kCPU);
Tensor scalar_tensor(double value, DType dtype = DType::f32, Device device = kCPU);
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// Copies values (converted to dtype) into a new tensor of `shape` (default: 1-D).
Tensor tensor(const std::vector<double>& values, const Shape& shape = {}, DType dtype = DType::f32,
              Device device = kCPU);
Tensor tensor(const std::vector<float>& values, const Shape& shape = {});
Tensor tensor(const std::vector<int64_t>& values, const Shape& shape = {});

// ---- random numbers (ops/random.cpp): a thread-local Philox generator (seed, offset);
// a tensor of n elements consumes n counters, so results do not depend on threads/device.
struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;
};
void manual_seed(uint64_t seed);  // this thread's default generator
Generator& default_generator();   // this thread's
Tensor rand(const Shape& shape, DType dtype = DType::f32, Device device = kCPU,
            Generator* gen = nullptr);  // uniform [0, 1)
Tensor randn(const Shape& shape, DType dtype = DType::f32, Device device = kCPU,
             Generator* gen = nullptr);
// Zeroes each element with probability p and scales the rest by 1/(1-p) (training only).
Tensor dropout(const Tensor& x, double p, bool training = true, Generator* gen = nullptr);

// ---- elementwise (ops/elementwise.cpp), NumPy broadcasting and type promotion.
// One function per row of the op table (core/op_table.h lists them with their formulas):
//   Tensor neg(const Tensor& x), exp, log, sqrt, ..., gelu (exact), gelu_tanh, logical_not
//   Tensor add(const Tensor& a, const Tensor& b), sub, mul, div, pow, maximum, ..., ge
#define RG_DECLARE_UNARY(name, ...) Tensor name(const Tensor& x);
RG_UNARY_OPS(RG_DECLARE_UNARY)
#undef RG_DECLARE_UNARY
#define RG_DECLARE_BINARY(name, ...) Tensor name(const Tensor& a, const Tensor& b);
RG_BINARY_OPS(RG_DECLARE_BINARY)
#undef RG_DECLARE_BINARY
Tensor add(const Tensor& a, const Tensor& b, double alpha);  // a + alpha * b
Tensor pow(const Tensor& a, double exponent);
// PyTorch's gelu(x, approximate): "none" is the exact x * Phi(x) (nanoGPT's nn.GELU()),
// "tanh" the GPT-2 approximation; anything else throws.
Tensor gelu(const Tensor& x, std::string_view approximate);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
Tensor clamp(const Tensor& x, double min, double max);
// Scalar forms
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// ---- reductions (ops/reduce.cpp); dims may be negative; empty dims = all. One function per
// row of the reduction table (core/op_table.h lists them with their formulas):
//   Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false),
//          mean, amax, amin, prod
//   Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false), argmin
#define RG_DECLARE_REDUCE(name, rule, ...) RG_DECLARE_REDUCE_##rule(name)
#define RG_DECLARE_REDUCE_DIMS(name) \
  Tensor name(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
#define RG_DECLARE_REDUCE_widen RG_DECLARE_REDUCE_DIMS
#define RG_DECLARE_REDUCE_floating RG_DECLARE_REDUCE_DIMS
#define RG_DECLARE_REDUCE_same RG_DECLARE_REDUCE_DIMS
#define RG_DECLARE_REDUCE_index(name) \
  Tensor name(const Tensor& x, int64_t dim, bool keepdim = false);
RG_REDUCE_OPS(RG_DECLARE_REDUCE)
#undef RG_DECLARE_REDUCE_index
#undef RG_DECLARE_REDUCE_same
#undef RG_DECLARE_REDUCE_floating
#undef RG_DECLARE_REDUCE_widen
#undef RG_DECLARE_REDUCE_DIMS
#undef RG_DECLARE_REDUCE
Tensor argmax(const Tensor& x);  // over all elements (flattened index)
// Reduces a gradient of a broadcast result back to `shape` (sums broadcast dims).
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- linear algebra (ops/matmul.cpp): 1-D, 2-D and batched with broadcast batch dims
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x @ weight^T + bias, weight [out, in] (PyTorch's Linear layout)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- neural-network ops (one file each, fused forward + backward)
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
Tensor embedding(const Tensor& weight, const Tensor& indices);
// softmax(scale * q @ k^T) @ v by the fused attention kernel (F.scaled_dot_product_attention
// without mask or dropout): q [..., T, D], k [..., S, D], v [..., S, Dv], the same leading dims
// (no broadcast), S >= 1. causal: query i sees keys j <= i. scale <= 0: 1 / sqrt(D). The
// T x S probabilities are never stored: backward recomputes them (ops/attention.cpp).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    bool is_causal = false, double scale = 0);
// Multi-head attention of heads cut from one packed projection, as GPT's c_attn makes it:
// qkv [B, T, 3C] holds q, k and v side by side, each n_head heads of C / n_head; returns
// [B, T, C] with the heads merged (scale 1 / sqrt(C / n_head)). The same as splitting qkv,
// viewing the heads and calling scaled_dot_product_attention, in one node: its backward
// writes the [B, T, 3C] gradient once instead of three zero-filled ones that are then added.
Tensor packed_qkv_attention(const Tensor& qkv, int64_t n_head, bool is_causal = true);
enum class Reduction { none, mean, sum };
// logits [N, C] (or [..., C]), targets [N] (or [...]) integer class ids.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     Reduction reduction = Reduction::mean, int64_t ignore_index = -100);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

// ---- composite ops: built from the ops of this header, so they run on every device and
// autograd differentiates them (no kernel, no derivative of their own). dims empty = all.
// Statistics (ops/statistics.cpp). correction: 1 = PyTorch's unbiased=True, 0 = population.
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1,
           bool keepdim = false);
Tensor std_dev(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1,
               bool keepdim = false);  // torch.std
std::pair<Tensor, Tensor> var_mean(const Tensor& x, const std::vector<int64_t>& dims = {},
                                   double correction = 1, bool keepdim = false);
std::pair<Tensor, Tensor> std_mean(const Tensor& x, const std::vector<int64_t>& dims = {},
                                   double correction = 1, bool keepdim = false);
// The vector p-norm over dims: p = 2 (PyTorch's 'fro'), 1, +-inf (max/min |x|), 0 (count of
// nonzeros), any other p; the gradient of a zero slice's norm is 0 (p > 1), as in PyTorch.
Tensor norm(const Tensor& x, double p = 2, const std::vector<int64_t>& dims = {},
            bool keepdim = false);
// Masks, repeats, encodings (ops/masks.cpp).
Tensor tril(const Tensor& x, int64_t diagonal = 0);  // of the last two dims
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor outer(const Tensor& a, const Tensor& b);        // a [n], b [m] -> [n, m]
Tensor repeat(const Tensor& x, const Shape& repeats);  // torch.Tensor.repeat
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = {});
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);  // int64 indices -> int64
// F.pad (ops/padding.cpp): (before, after) pairs from the last dim; negative amounts crop;
// mode constant, reflect, replicate or circular.
Tensor pad(const Tensor& x, const std::vector<int64_t>& amounts,
           const std::string& mode = "constant", double value = 0);
// torch.einsum (ops/einsum.cpp) by matmul: letters, "...", implicit output; no diagonals.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
// Convolution and pooling by im2col + matmul (ops/convolution.cpp); PyTorch's shapes:
// x [N, C, H, W] (or unbatched [C, H, W]), weight [O, C / groups, KH, KW], bias [O] or undefined.
using Pair = std::array<int64_t, 2>;  // (height, width)
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Pair stride = {1, 1}, Pair padding = {0, 0}, Pair dilation = {1, 1},
              int64_t groups = 1);
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// stride {0, 0}: the kernel size (PyTorch's default).
Tensor max_pool2d(const Tensor& x, Pair kernel, Pair stride = {0, 0}, Pair padding = {0, 0},
                  Pair dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Pair kernel, Pair stride = {0, 0}, Pair padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& x, Pair output_size);  // PyTorch's windows
// F.batch_norm (ops/batch_norm.cpp): x [N, C, *]; training normalizes by the batch's biased
// variance and updates running_mean/running_var (unbiased) in place without autograd;
// evaluation uses the running statistics. Undefined tensors are absent.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

// ---- shape ops (ops/views.cpp, ops/cat.cpp); views share storage
Tensor view(const Tensor& x, const Shape& shape);
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
Tensor tril_mask(int64_t rows, int64_t cols, Device device = kCPU);  // bool, true on/below diagonal

// ---- indexing, scans and sorting (ops/indexing.cpp, ops/cumsum.cpp, ops/sort.cpp), as
// PyTorch's: dims may be negative; indices int64 or int32, an index out of range throws an
// rg::Error saying "out of range" (on sim/cuda at the next host synchronization).
// gather: out[p] = x[p with coordinate dim := index[p]], out of index's shape; index of x's
// rank, each other dim at most x's. Backward: the gradient scatter-added back.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// gather after broadcasting x and indices against each other except at dim.
Tensor take_along_dim(const Tensor& x, const Tensor& indices, int64_t dim);
// A copy of x with x[p with coordinate dim := index[p]] = src[p] (scatter: a repeated index
// keeps the last write; scatter_add: adds, in index order); src: index's shape or larger.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// The slices of x at index (1-D) along dim; index_add adds alpha * source's slices there.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 double alpha = 1);
// A copy of x with its slices at index (1-D) along dim replaced by (accumulate: plus)
// values, which broadcast to index_select(x, dim, index)'s shape; the gradient of x is
// zero at the replaced slices. The write of Python's x[idx] = v.
Tensor index_put(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& values,
                 bool accumulate = false);
// Running sum along dim (integer and bool inputs give int64); backward: the reversed cumsum.
Tensor cumsum(const Tensor& x, int64_t dim);
struct ValuesIndices {
  Tensor values, indices;  // indices int64
};
// Sorted along dim; always stable (equal values keep their order), NaN above every number.
// The values' gradient flows back to the positions they came from.
ValuesIndices sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (smallest) along dim, in sorted order.
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                   bool sorted = true);
// Values and index of the max (min) along dim: NaN wins, ties give the first index; the
// gradient flows to that index only. Without dim: amax (amin) over all elements.
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// ---- copies (ops/copy.cpp)
Tensor contiguous(const Tensor& x);
Tensor clone(const Tensor& x);
// non_blocking: see Tensor::to (core/tensor.h).
Tensor to(const Tensor& x, Device device, DType dtype, bool non_blocking = false);

// ---- multi-tensor optimizer ops (ops/multi_tensor.cpp): one kernel pass over a list; no
// autograd. Each checks its list (one device, one dtype, matching shapes) and throws
// rg::Error naming the op, the list position and the value.
// The fused AdamW update (kernel adamw_multi, core/op_table.h) of every set, in place; all
// tensors contiguous, of their param's shape, of one dtype (f32 or f64) and one device;
// gradients are read scaled by grad_scale (rounded as g.mul_(grad_scale) would).
void adamw_multi(const std::vector<AdamWTensors>& sets, const AdamWArgs& args,
                 double grad_scale = 1.0);
// Each tensor's sum of squares in double: an f64 tensor [N] on the tensors' device. The
// tensors: one floating dtype, one device, any layout (non-contiguous ones are copied).
Tensor sum_squares_multi(const std::vector<Tensor>& tensors);
// Every tensor multiplied by `scale` in place, the bits of x.mul_(scale) on each; tensors
// contiguous, of one floating dtype and one device.
void scale_multi(const std::vector<Tensor>& tensors, double scale);

// ---- comparisons for tests and checks
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const Tensor& a, const Tensor& b);  // same shape and bit-identical values
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace rg
