// matmul with NumPy semantics: 1-D operands are promoted and the added dim removed,
// batch dims broadcast. Batched inputs are flattened to [B, M, K] @ [B, K, N] and handed
// to the device GEMM kernel, which takes transposed views without copying.
// Derivatives: dA = dC @ B^T, dB = A^T @ dC, summed over broadcast batch dims.
// linear(x, weight, bias) is one kernel (the bias added in the GEMM's epilogue) and one node,
// x's leading dims flattened into the GEMM's rows.
#include "kernels/builtin.h"
#include "ops/autocast.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(matmul): dA = dC @ B^T, dB = A^T @ dC, each summed back over broadcast batch dims.
struct MatmulDerivative {
  SavedTensor a, b;
  Shape shape_a, shape_b;
  bool need_a, need_b;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor ga, gb;
    if (need_a) ga = sum_to(matmul(grad, transpose(b.get(), -1, -2)), shape_a);
    if (need_b) gb = sum_to(matmul(transpose(a.get(), -1, -2), grad), shape_b);
    return {ga, gb};
  }
};

// Whether the leading `n` dims of t read as one dim by stride (then a reshape is a view).
bool leading_dims_merge(const Tensor& t, int64_t n) {
  int64_t previous = -1;
  for (int64_t d = 0; d < n; ++d) {
    if (t.size(d) == 1) continue;
    if (previous >= 0 && t.stride(previous) != t.stride(d) * t.size(d)) return false;
    previous = d;
  }
  return true;
}

// out [B0*B1, M, N] = a4 [B0, B1, M, K] @ b4 [B0, B1, K, N] with batch dims that do not
// merge (attention's heads, a broadcast operand): one kernel call per outer index, each over
// the inner batch dim by stride, instead of copying the operands to contiguous first.
void matmul_per_outer_batch(const Tensor& flat, const Tensor& a4, const Tensor& b4) {
  Tensor out4 = view(flat, {a4.size(0), a4.size(1), flat.size(1), flat.size(2)});
  for (int64_t i = 0; i < a4.size(0); ++i)
    RG_KERNEL(flat.device(), matmul)(select(out4, 0, i), select(a4, 0, i), select(b4, 0, i));
}

// [B, M, N] = a @ b broadcast over `batch` (B = its product), by stride where the batch dims
// merge, else per outer batch index; a and b are detached.
Tensor batched_product(const Tensor& a, const Tensor& b, const Shape& batch, int64_t M, int64_t K,
                       int64_t N) {
  const int64_t B = numel_of(batch), nb = static_cast<int64_t>(batch.size());
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {M, K});
  eb.insert(eb.end(), {K, N});
  Tensor a4 = expand(a, ea), b4 = expand(b, eb);
  Tensor flat = empty({B, M, N}, a.dtype(), a.device());
  if (flat.numel() == 0) return flat;
  if (K == 0)
    RG_KERNEL(a.device(), fill)(flat, 0.0);
  else if (nb == 2 && !(leading_dims_merge(a4, nb) && leading_dims_merge(b4, nb)))
    matmul_per_outer_batch(flat, a4, b4);
  else
    RG_KERNEL(a.device(), matmul)(flat, reshape(a4, {B, M, K}), reshape(b4, {B, K, N}));
  return flat;
}

Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  // a [..., M, K], b [..., K, N], both >= 2-D.
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b, "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out;
  {
    NoGradGuard no_grad;
    if (b.dim() == 2 && a.dim() > 2 && a.is_contiguous()) {
      // [..., M, K] @ [K, N]: one GEMM of [B*M, K] @ [K, N] when a's rows can be merged.
      Tensor a2 = reshape(a.detach(), {1, numel_of(batch) * M, K});
      Tensor flat = empty({1, numel_of(batch) * M, N}, a.dtype(), a.device());
      if (flat.numel()) RG_KERNEL(a.device(), matmul)(flat, a2, unsqueeze(b.detach(), 0));
      out = view(flat, out_shape);
    } else {
      out = view(batched_product(a.detach(), b.detach(), batch, M, K, N), out_shape);
    }
  }
  if (needs_grad({a, b}))
    record("matmul", out, {a, b},
           MatmulDerivative{SavedTensor(a, "matmul"), SavedTensor(b, "matmul"), a.shape(),
                            b.shape(), a.requires_grad(), b.requires_grad()});
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  const Tensor a = autocast(AutocastOp::matmul, a_in), b = autocast(AutocastOp::matmul, b_in);
  check_defined("matmul", a, "first input");
  check_defined("matmul", b, "second input");
  check_same_device("matmul", a, b);
  RG_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: both inputs need at least 1 dim, got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  RG_CHECK(a.dtype() == b.dtype(), "matmul: expected both inputs to have the same dtype, got ",
           a.dtype(), " and ", b.dtype());
  RG_CHECK(is_floating(a.dtype()), "matmul: expected floating-point inputs, got ", a.dtype());
  int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  RG_CHECK(ka == kb, "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
           " cannot be multiplied (", ka, " != ", kb, ")");
  if (a.dim() == 1 && b.dim() == 1) return sum(mul(a, b));
  if (a.dim() == 1) return squeeze(matmul_nd(unsqueeze(a, 0), b), -2);
  if (b.dim() == 1) return squeeze(matmul_nd(a, unsqueeze(b, -1)), -1);
  return matmul_nd(a, b);
}

namespace {

// d(linear), x's leading dims flattened into M rows: dx = dy @ W, dW = dy^T @ x (transposed
// views by stride, no copies), db = dy summed over the rows.
struct LinearDerivative {
  SavedTensor x, weight;
  Shape x_shape;
  bool need_x, need_weight, need_bias, has_bias;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    const int64_t N = grad.size(-1), K = x_shape.back();
    const int64_t M = numel_of(Shape(x_shape.begin(), x_shape.end() - 1));
    const Tensor dy = grad.dim() == 2 ? grad : reshape(grad, {M, N});
    std::vector<Tensor> grads(has_bias ? 3 : 2);
    if (need_x) grads[0] = reshape(matmul(dy, weight.get()), x_shape);
    if (need_weight) grads[1] = weight_gradient(dy, M, N, K);
    if (need_bias) grads[2] = sum(dy, {0});
    return grads;
  }
  // dW = dy^T @ x. 2-D: one GEMM. More dims: one product per leading index [N,T] @ [T,K],
  // summed over them in double: k micro-batches then make the same per-sequence products as
  // one batch, and f32 gradient accumulation stays within 1e-5 of one batch (one GEMM over
  // all B*T rows: 2e-5). The device's linear_weight_grad kernel where it has one (cpu, f32
  // and f64), else matmul and the reduce kernel's sum.
  Tensor weight_gradient(const Tensor& dy, int64_t M, int64_t N, int64_t K) const {
    const int64_t T = x_shape[x_shape.size() - 2];
    if (x_shape.size() == 2 || T == 0) return matmul(transpose(dy, 0, 1), reshape(x.get(), {M, K}));
    const Tensor x3 = reshape(x.get(), {M / T, T, K}), dy3 = reshape(dy, {M / T, T, N});
    const auto kernel = kernel_table(dy.device().type).linear_weight_grad;
    if (!kernel || (dy.dtype() != DType::f32 && dy.dtype() != DType::f64))
      return sum(matmul(transpose(dy3, 1, 2), x3), {0});
    Tensor dweight = empty({N, K}, dy.dtype(), dy.device());
    kernel(dweight, contiguous(dy3), contiguous(x3));
    return dweight;
  }
};

// out [M,N] = x2 [M,K] @ weight^T + bias by the device's fused linear kernel; x2 detached.
Tensor linear_forward(const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  NoGradGuard no_grad;
  Tensor out = empty({x2.size(0), weight.size(0)}, x2.dtype(), x2.device());
  if (out.numel() == 0) return out;
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  RG_KERNEL(x2.device(), linear)(out, x2, weight.detach(), b);
  return out;
}

void check_linear_operands(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined("linear", x, "input");
  check_defined("linear", weight, "weight");
  check_same_device("linear", x, weight);
  RG_CHECK(weight.dim() == 2, "linear: weight must be 2-D [out, in], got shape ",
           shape_str(weight.shape()));
  RG_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ",
           shape_str(x.shape()), " does not match weight of shape ", shape_str(weight.shape()),
           " (", x.dim() ? x.size(-1) : 0, " != ", weight.size(1), ")");
  RG_CHECK(x.dtype() == weight.dtype() && is_floating(x.dtype()),
           "linear: expected floating-point input and weight of one dtype, got ", x.dtype(),
           " and ", weight.dtype());
  if (!bias.defined()) return;
  check_same_device("linear", x, bias);
  RG_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear: bias must have shape [",
           weight.size(0), "] (the weight's out dim) for weight of shape ",
           shape_str(weight.shape()), ", got bias of shape ", shape_str(bias.shape()));
  RG_CHECK(bias.dtype() == x.dtype(), "linear: bias dtype ", bias.dtype(),
           " differs from the input's ", x.dtype());
}

}  // namespace

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  const Tensor x = autocast(AutocastOp::linear, x_in);
  const Tensor weight = autocast(AutocastOp::linear, weight_in);
  const Tensor bias = autocast(AutocastOp::linear, bias_in);
  check_linear_operands(x, weight, bias);
  // Leading dims that do not merge into the GEMM's rows by stride: the composed form.
  if (x.dim() < 2 || !leading_dims_merge(x, x.dim() - 1)) {
    Tensor y = matmul(x, weight.t());
    return bias.defined() ? add(y, bias) : y;
  }
  const int64_t K = x.size(-1), M = numel_of(Shape(x.shape().begin(), x.shape().end() - 1));
  Tensor x2 = x.dim() == 2 ? x.detach() : reshape(x.detach(), {M, K});
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(weight.size(0));
  Tensor out = view(linear_forward(x2, weight, bias), out_shape);
  std::vector<Tensor> inputs = {x, weight};
  if (bias.defined()) inputs.push_back(bias);
  if (!needs_grad(inputs)) return out;
  record("linear", out, inputs,
         LinearDerivative{SavedTensor(x, "linear"), SavedTensor(weight, "linear"), x.shape(),
                          x.requires_grad(), weight.requires_grad(),
                          bias.defined() && bias.requires_grad(), bias.defined()});
  return out;
}

Tensor Tensor::matmul(const Tensor& other) const { return rg::matmul(*this, other); }

}  // namespace rg
