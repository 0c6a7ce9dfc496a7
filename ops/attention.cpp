// scaled_dot_product_attention: the fused attention kernel (kernels/cpu/attention.cpp,
// kernels/cuda/attention.cu) behind one op. The leading dims are flattened into one batch dim
// for the kernel; the forward saves q, k, v, the output and the rows' log-sum-exp (T values
// per row, not the T x S probabilities), and the backward kernel recomputes the probabilities.
// packed_qkv_attention: the same kernels for heads cut out of one packed projection
// [B, T, 3C], in one node whose backward writes the packed gradient once.
#include <cmath>

#include "kernels/builtin.h"
#include "ops/autocast.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(attention): dq, dk, dv from the backward kernel (which recomputes p from lse).
struct AttentionDerivative {
  SavedTensor q, k, v, out;
  Tensor lse;
  Shape shape_q, shape_k, shape_v;
  bool causal;
  double scale;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor qv = q.get(), kv = k.get(), vv = v.get(), ov = out.get();
    Tensor dout = contiguous(reshape(grad, ov.shape())).to(ov.dtype());
    Tensor dq = empty(qv.shape(), qv.dtype(), qv.device());
    Tensor dk = empty(kv.shape(), kv.dtype(), kv.device());
    Tensor dv = empty(vv.shape(), vv.dtype(), vv.device());
    RG_KERNEL(qv.device(), attention_backward)
    (dq, dk, dv, dout, qv, kv, vv, ov, lse, causal, scale);
    return {reshape(dq, shape_q), reshape(dk, shape_k), reshape(dv, shape_v)};
  }
};

void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v) {
  const char* op = "scaled_dot_product_attention";
  check_defined(op, q, "query");
  check_defined(op, k, "key");
  check_defined(op, v, "value");
  check_same_device(op, q, k);
  check_same_device(op, q, v);
  RG_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), op,
           ": query, key and value must have one dtype, got ", q.dtype(), ", ", k.dtype(), " and ",
           v.dtype());
  RG_CHECK(is_floating(q.dtype()), op, ": expected floating-point inputs, got ", q.dtype());
  RG_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), op,
           ": query, key and value need the same number (>= 2) of dims, got shapes ",
           shape_str(q.shape()), ", ", shape_str(k.shape()), " and ", shape_str(v.shape()));
  const Shape lead(q.shape().begin(), q.shape().end() - 2);
  RG_CHECK(Shape(k.shape().begin(), k.shape().end() - 2) == lead &&
               Shape(v.shape().begin(), v.shape().end() - 2) == lead && k.size(-1) == q.size(-1) &&
               v.size(-2) == k.size(-2),
           op, ": shapes ", shape_str(q.shape()), ", ", shape_str(k.shape()), " and ",
           shape_str(v.shape()), " do not fit [..., T, D], [..., S, D], [..., S, Dv]");
  RG_CHECK(k.size(-2) >= 1, op, ": needs at least one key, got shape ", shape_str(k.shape()));
}

// Head h of part `part` (0 q, 1 k, 2 v) of a packed [B, T, 3C] tensor, as [B, H, T, D] views.
Tensor packed_heads(const Tensor& packed, int part, int64_t H) {
  const int64_t B = packed.size(0), T = packed.size(1), C = packed.size(2) / 3;
  return transpose(view(narrow(packed, 2, part * C, C), {B, T, H, C / H}), 1, 2);
}

// d(packed_qkv_attention): the backward kernel's dq, dk, dv copied once each into their
// thirds of one packed gradient (no zeros, no adds: split's slices would scatter each into a
// zeroed [B, T, 3C] and the engine would add the three).
struct PackedAttentionDerivative {
  SavedTensor q, k, v, out;
  Tensor lse;
  int64_t B, T, H, D;
  bool causal;
  double scale;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor qv = q.get(), kv = k.get(), vv = v.get(), ov = out.get();
    const Tensor dout =
        contiguous(transpose(reshape(grad.to(ov.dtype()), {B, T, H, D}), 1, 2)).view({B * H, T, D});
    Tensor dq = empty(qv.shape(), qv.dtype(), qv.device());
    Tensor dk = empty(kv.shape(), kv.dtype(), kv.device());
    Tensor dv = empty(vv.shape(), vv.dtype(), vv.device());
    RG_KERNEL(qv.device(), attention_backward)
    (dq, dk, dv, dout, qv, kv, vv, ov, lse, causal, scale);
    Tensor dpacked = empty({B, T, 3 * H * D}, qv.dtype(), qv.device());
    const Tensor parts[] = {dq, dk, dv};
    for (int part = 0; part < 3; ++part)
      RG_KERNEL(qv.device(), copy)(packed_heads(dpacked, part, H), view(parts[part], {B, H, T, D}));
    return {dpacked};
  }
};

void check_packed_inputs(const Tensor& qkv, int64_t n_head) {
  const char* op = "packed_qkv_attention";
  check_defined(op, qkv, "qkv");
  RG_CHECK(is_floating(qkv.dtype()), op, ": expected a floating-point qkv, got ", qkv.dtype());
  RG_CHECK(qkv.dim() == 3 && qkv.size(2) % 3 == 0, op,
           ": qkv must be [B, T, 3C] (q, k and v side by side), got shape ",
           shape_str(qkv.shape()));
  RG_CHECK(n_head >= 1 && (qkv.size(2) / 3) % n_head == 0, op, ": n_head ", n_head,
           " does not divide the width C = ", qkv.size(2) / 3);
  RG_CHECK(qkv.size(1) >= 1, op, ": needs at least one position, got shape ",
           shape_str(qkv.shape()));
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q_given, const Tensor& k_given,
                                    const Tensor& v_given, bool is_causal, double scale) {
  const Tensor q = autocast(AutocastOp::scaled_dot_product_attention, q_given);
  const Tensor k = autocast(AutocastOp::scaled_dot_product_attention, k_given);
  const Tensor v = autocast(AutocastOp::scaled_dot_product_attention, v_given);
  check_attention_inputs(q, k, v);
  const int64_t T = q.size(-2), S = k.size(-2), D = q.size(-1), Dv = v.size(-1);
  const int64_t B = numel_of(Shape(q.shape().begin(), q.shape().end() - 2));
  if (scale <= 0) scale = 1.0 / std::sqrt(static_cast<double>(D));
  Tensor q3 = contiguous(reshape(q, {B, T, D})), k3 = contiguous(reshape(k, {B, S, D}));
  Tensor v3 = contiguous(reshape(v, {B, S, Dv}));
  Tensor out = empty({B, T, Dv}, q.dtype(), q.device());
  Tensor lse = empty({B, T}, q.dtype() == DType::f64 ? DType::f64 : DType::f32, q.device());
  if (out.numel()) RG_KERNEL(q.device(), attention)
  (out, lse, q3.detach(), k3.detach(), v3.detach(), is_causal, scale);
  Shape out_shape = q.shape();
  out_shape.back() = Dv;
  Tensor result = view(out, out_shape);
  if (needs_grad({q, k, v}))
    record("scaled_dot_product_attention", result, {q, k, v},
           AttentionDerivative{SavedTensor(q3, "scaled_dot_product_attention"),
                               SavedTensor(k3, "scaled_dot_product_attention"),
                               SavedTensor(v3, "scaled_dot_product_attention"),
                               SavedTensor(out, "scaled_dot_product_attention"), lse, q.shape(),
                               k.shape(), v.shape(), is_causal, scale});
  return result;
}

Tensor packed_qkv_attention(const Tensor& qkv_given, int64_t n_head, bool is_causal) {
  const Tensor qkv = autocast(AutocastOp::scaled_dot_product_attention, qkv_given);
  check_packed_inputs(qkv, n_head);
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, H = n_head, D = C / H;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Tensor q3, k3, v3, out, lse, result;
  {
    NoGradGuard no_grad;
    const Tensor packed = qkv.detach();
    q3 = contiguous(packed_heads(packed, 0, H)).view({B * H, T, D});
    k3 = contiguous(packed_heads(packed, 1, H)).view({B * H, T, D});
    v3 = contiguous(packed_heads(packed, 2, H)).view({B * H, T, D});
    out = empty({B * H, T, D}, qkv.dtype(), qkv.device());
    lse = empty({B * H, T}, qkv.dtype() == DType::f64 ? DType::f64 : DType::f32, qkv.device());
    if (out.numel()) RG_KERNEL(qkv.device(), attention)(out, lse, q3, k3, v3, is_causal, scale);
    result = contiguous(transpose(view(out, {B, H, T, D}), 1, 2)).view({B, T, C});
  }
  if (needs_grad({qkv}))
    record("packed_qkv_attention", result, {qkv},
           PackedAttentionDerivative{
               SavedTensor(q3, "packed_qkv_attention"), SavedTensor(k3, "packed_qkv_attention"),
               SavedTensor(v3, "packed_qkv_attention"), SavedTensor(out, "packed_qkv_attention"),
               lse, B, T, H, D, is_causal, scale});
  return result;
}

}  // namespace rg
