// matmul with NumPy semantics: 1-D operands are promoted and the added dim removed,
// batch dims broadcast. Batched inputs are flattened to [B, M, K] @ [B, K, N] and handed
// to the device GEMM kernel, which takes transposed views without copying.
// Derivatives: dA = dC @ B^T, dB = A^T @ dC, summed over broadcast batch dims.
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
      int64_t B = numel_of(batch);
      Shape ea = batch, eb = batch;
      ea.insert(ea.end(), {M, K});
      eb.insert(eb.end(), {K, N});
      Tensor a3 = reshape(expand(a.detach(), ea), {B, M, K});
      Tensor b3 = reshape(expand(b.detach(), eb), {B, K, N});
      Tensor flat = empty({B, M, N}, a.dtype(), a.device());
      if (flat.numel()) {
        if (K == 0)
          RG_KERNEL(a.device(), fill)(flat, 0.0);
        else
          RG_KERNEL(a.device(), matmul)(flat, a3, b3);
      }
      out = view(flat, out_shape);
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

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  const Tensor x = autocast(AutocastOp::linear, x_in);
  const Tensor weight = autocast(AutocastOp::linear, weight_in);
  const Tensor bias = autocast(AutocastOp::linear, bias_in);
  RG_CHECK(weight.dim() == 2, "linear: weight must be 2-D [out, in], got shape ",
           shape_str(weight.shape()));
  RG_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ",
           shape_str(x.shape()), " does not match weight of shape ", shape_str(weight.shape()),
           " (", x.dim() ? x.size(-1) : 0, " != ", weight.size(1), ")");
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? add(y, bias) : y;
}

Tensor Tensor::matmul(const Tensor& other) const { return rg::matmul(*this, other); }

}  // namespace rg
