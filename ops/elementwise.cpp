// Elementwise ops and their derivatives, generated from the op table (core/op_table.h):
// one public function per row, whose forward runs the row's kernel and whose backward runs
// the row's gradient kernel (or passes g through when the gradient is just `g`). Binary ops
// broadcast (NumPy rules) and promote dtypes (bool < int < float), then apply the row's
// dtype rule; the gradient of a broadcast input is summed back to its shape (sum_to).
// An op records a node when its output is floating and an input requires grad. It saves for
// backward only the tensors its row's gradient reads (add saves nothing, mul its inputs, exp
// its output), read off the row's gradient text.
#include <array>
#include <cctype>
#include <cmath>
#include <string_view>

#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// The dtype an op computes in, from its (promoted) input dtype and the row's rule.
DType compute_dtype(const ElementwiseInfo& op, DType in, bool unary) {
  switch (op.rule) {
    case DTypeRule::same:
      RG_CHECK(!unary || in != DType::b8, op.name, ": not supported for bool tensors");
      return in == DType::b8 ? DType::i64 : in;
    case DTypeRule::floating:
      return is_floating(in) ? in : DType::f32;
    case DTypeRule::boolean:
      return in;
  }
  RG_FAIL(op.name, ": unknown dtype rule");
}

DType out_dtype(const ElementwiseInfo& op, DType compute) {
  return op.rule == DTypeRule::boolean ? DType::b8 : compute;
}

// Runs the kernel with no graph: inputs already on one device and of one dtype.
Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name(op));
  Tensor out = empty(shape, out_dtype(info(op), a.dtype()), a.device());
  if (out.numel())
    RG_KERNEL(a.device(), binary)(op, out, expand(a.detach(), shape), expand(b.detach(), shape));
  return out;
}

Tensor unary_raw(UnaryOp op, const Tensor& x) {
  Tensor out = empty(x.shape(), out_dtype(info(op), x.dtype()), x.device());
  if (out.numel()) RG_KERNEL(x.device(), unary)(op, out, x);
  return out;
}

// Whether a gradient expression of the table reads variable `name` (x, a, b or y): whether
// the one-letter identifier appears as a token of its text.
bool expression_reads(std::string_view expr, char name) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < expr.size(); ++i)
    if (expr[i] == name && (i == 0 || !is_word(expr[i - 1])) &&
        (i + 1 == expr.size() || !is_word(expr[i + 1])))
      return true;
  return false;
}

// Which variables a row's gradient for each input reads: bit v for kVariables[v].
constexpr char kVariables[] = "xaby";
using ReadMasks = std::array<uint8_t, 2>;

ReadMasks read_masks_of(const ElementwiseInfo& op) {
  ReadMasks masks{0, 0};
  for (int i = 0; i < 2; ++i)
    for (int v = 0; v < 4; ++v)
      if (op.gradient[i] && !op.gradient_is_g[i] && expression_reads(op.gradient[i], kVariables[v]))
        masks[i] |= uint8_t(1u << v);
  return masks;
}

// The masks of every row, scanned from the table's text once (not on every op call).
template <typename Op, int kCount>
const ReadMasks& read_masks(Op op) {
  static const std::array<ReadMasks, kCount> table = [] {
    std::array<ReadMasks, kCount> t{};
    for (int i = 0; i < kCount; ++i) t[i] = read_masks_of(info(Op(i)));
    return t;
  }();
  return table[static_cast<int>(op)];
}

// t saved for backward when a gradient that will run (need[i]) reads `name`, else an empty slot.
SavedTensor save_if_read(const char* op, const ReadMasks& masks, const bool need[2], char name,
                         const Tensor& t) {
  const uint8_t bit = uint8_t(1u << (std::string_view(kVariables).find(name)));
  const bool read = (need[0] && (masks[0] & bit)) || (need[1] && (masks[1] & bit));
  return read ? SavedTensor(t, op) : SavedTensor();
}

// A saved operand, or g in the place of one the gradient does not read (never looked at).
Tensor saved_or(const SavedTensor& saved, const Tensor& g) {
  Tensor t = saved.get();
  return t.defined() ? t : g;
}

// The gradient of an input: the row's gradient kernel, or g itself when the row's gradient
// is `g`; binary gradients are summed back to the input's (broadcast) shape. `dtype` is the
// output's (all operands' after promotion).
Tensor unary_gradient(UnaryOp op, const Tensor& g_in, const SavedTensor& x, const SavedTensor& y,
                      DType dtype) {
  if (info(op).gradient_is_g[0]) return g_in;
  Tensor g = g_in.to(dtype);
  Tensor grad = empty(g.shape(), dtype, g.device());
  if (grad.numel())
    RG_KERNEL(g.device(), unary_backward)(op, grad, g, saved_or(x, g), saved_or(y, g));
  return grad;
}

struct BinaryOperands {
  SavedTensor a, b, y;
  Shape shape_a, shape_b;
  DType dtype;
};

Tensor binary_gradient(BinaryOp op, int which, const Tensor& g_in, const BinaryOperands& in) {
  const Shape& input_shape = which == 0 ? in.shape_a : in.shape_b;
  if (info(op).gradient_is_g[which]) return sum_to(g_in, input_shape);
  Tensor g = g_in.to(in.dtype);
  Tensor grad = empty(g.shape(), in.dtype, g.device());
  if (grad.numel()) RG_KERNEL(g.device(), binary_backward)
  (op, which, grad, g, expand(saved_or(in.a, g).detach(), g.shape()),
   expand(saved_or(in.b, g).detach(), g.shape()), saved_or(in.y, g));
  return sum_to(grad, input_shape);
}

// d(unary row): the row's gradient kernel of (g, x, y).
struct UnaryDerivative {
  UnaryOp op;
  SavedTensor x, y;
  DType dtype;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    return {unary_gradient(op, grad, x, y, dtype)};
  }
};

// d(binary row): the row's gradient kernel for each input that needs one, summed back to
// that input's shape.
struct BinaryDerivative {
  BinaryOp op;
  BinaryOperands in;
  bool need_a, need_b;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    return {need_a ? binary_gradient(op, 0, grad, in) : Tensor(),
            need_b ? binary_gradient(op, 1, grad, in) : Tensor()};
  }
};

Tensor scalar_like(const Tensor& t, double value) {
  DType dt = is_floating(t.dtype()) || value == std::floor(value) ? t.dtype() : DType::f32;
  if (t.dtype() == DType::b8) dt = value == std::floor(value) ? DType::i64 : DType::f32;
  return scalar_tensor(value, dt, t.device());
}

Tensor binary_op(BinaryOp op, const Tensor& a_in, const Tensor& b_in) {
  const char* name = op_name(op);
  check_defined(name, a_in, "first input");
  check_defined(name, b_in, "second input");
  check_same_device(name, a_in, b_in);
  DType ct = compute_dtype(info(op), promote_types(a_in.dtype(), b_in.dtype()), false);
  Tensor a = a_in.to(ct), b = b_in.to(ct);
  Tensor out = binary_raw(op, a, b);
  if (!is_floating(out.dtype()) || !needs_grad({a, b})) return out;

  const bool need[2] = {a.requires_grad(), b.requires_grad()};
  const ReadMasks& masks = read_masks<BinaryOp, kNumBinaryOps>(op);
  BinaryOperands saved{save_if_read(name, masks, need, 'a', a),
                       save_if_read(name, masks, need, 'b', b),
                       save_if_read(name, masks, need, 'y', out),
                       a.shape(),
                       b.shape(),
                       out.dtype()};
  record(name, out, {a, b}, BinaryDerivative{op, std::move(saved), need[0], need[1]});
  return out;
}

Tensor unary_op(UnaryOp op, const Tensor& x_in) {
  const char* name = op_name(op);
  check_defined(name, x_in, "input");
  Tensor x = x_in.to(compute_dtype(info(op), x_in.dtype(), true));
  Tensor out = unary_raw(op, x);
  if (!is_floating(out.dtype()) || !needs_grad({x})) return out;

  const bool need[2] = {true, false};
  const ReadMasks& masks = read_masks<UnaryOp, kNumUnaryOps>(op);
  record(name, out, {x},
         UnaryDerivative{op, save_if_read(name, masks, need, 'x', x),
                         save_if_read(name, masks, need, 'y', out), out.dtype()});
  return out;
}

// In-place `self = self op other` (no graph; see check in copy.cpp's spirit).
Tensor& binary_inplace(BinaryOp op, const Tensor& self, const Tensor& other_in, const char* name) {
  RG_CHECK(!GradMode::is_enabled() || (!self.requires_grad() && !other_in.requires_grad()), name,
           ": in-place operation on a tensor that requires grad; run it under NoGradGuard (as "
           "optimizers do) or use the out-of-place op");
  check_same_device(name, self, other_in);
  Shape target = broadcast_shapes(self.shape(), other_in.shape(), name);
  RG_CHECK(target == self.shape(), name, ": operand of shape ", shape_str(other_in.shape()),
           " cannot be broadcast to the destination's shape ", shape_str(self.shape()));
  if (self.numel()) {
    Tensor other = other_in.dtype() == self.dtype() ? other_in : other_in.detach().to(self.dtype());
    RG_KERNEL(self.device(), binary)(op, self, self, expand(other.detach(), self.shape()));
  }
  self.bump_version();
  return const_cast<Tensor&>(self);
}

// d(pow(x, exponent)) for a scalar exponent: g * exponent * x^(exponent - 1).
struct PowScalarDerivative {
  SavedTensor x;
  double exponent;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    return {mul(grad, mul(pow(x.get(), exponent - 1), exponent))};
  }
};

// d(where): the gradient where the condition picks each input, zero elsewhere, summed back
// to each input's shape.
struct WhereDerivative {
  SavedTensor cond;
  Shape shape_a, shape_b;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor c = cond.get();
    Tensor zero = zeros({}, grad.dtype(), grad.device());
    return {sum_to(where(c, grad, zero), shape_a), sum_to(where(c, zero, grad), shape_b)};
  }
};

}  // namespace

// One public function per row of the table (declared in ops.h the same way).
#define RG_DEFINE_UNARY(name, ...) \
  Tensor name(const Tensor& x) { return unary_op(UnaryOp::name, x); }
RG_UNARY_OPS(RG_DEFINE_UNARY)
#undef RG_DEFINE_UNARY
#define RG_DEFINE_BINARY(name, ...) \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::name, a, b); }
RG_BINARY_OPS(RG_DEFINE_BINARY)
#undef RG_DEFINE_BINARY

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  if (alpha == 1.0) return add(a, b);
  check_defined("add", a, "first input");
  check_defined("add", b, "second input");
  // alpha scales b in the dtype add computes in.
  DType ct = compute_dtype(info(BinaryOp::add), promote_types(a.dtype(), b.dtype()), false);
  return add(a, mul(b.to(ct), alpha));
}
Tensor add(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }

Tensor pow(const Tensor& a, double exponent) {
  Tensor x = is_floating(a.dtype()) ? a : a.to(DType::f32);
  Tensor out = binary_raw(BinaryOp::pow, x, scalar_tensor(exponent, x.dtype(), x.device()));
  if (needs_grad({x}))
    record("pow", out, {x}, PowScalarDerivative{SavedTensor(x, "pow"), exponent});
  return out;
}

Tensor gelu(const Tensor& x, std::string_view approximate) {
  if (approximate == "none") return gelu(x);
  RG_CHECK(approximate == "tanh", "gelu: approximate must be \"none\" or \"tanh\", got \"",
           approximate, "\"");
  return gelu_tanh(x);
}

Tensor clamp(const Tensor& x, double lo, double hi) {
  RG_CHECK(lo <= hi, "clamp: min ", lo, " > max ", hi);
  return minimum(maximum(x, scalar_like(x, lo)), scalar_like(x, hi));
}

Tensor where(const Tensor& cond, const Tensor& a_in, const Tensor& b_in) {
  check_defined("where", cond, "condition");
  RG_CHECK(cond.dtype() == DType::b8, "where: condition must be bool, got ", cond.dtype());
  check_same_device("where", cond, a_in);
  check_same_device("where", a_in, b_in);
  DType ct = promote_types(a_in.dtype(), b_in.dtype());
  Tensor a = a_in.to(ct), b = b_in.to(ct);
  Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, ct, a.device());
  if (out.numel()) {
    RG_KERNEL(a.device(), where)
    (out, expand(cond.detach(), shape), expand(a.detach(), shape), expand(b.detach(), shape));
  }
  if (needs_grad({a, b}))
    record("where", out, {a, b}, WhereDerivative{SavedTensor(cond, "where"), a.shape(), b.shape()});
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return where(mask, scalar_tensor(value, x.dtype(), x.device()), x);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, scalar_like(a, b)); }
Tensor operator+(double a, const Tensor& b) { return add(b, a); }
Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b) { return div(scalar_like(b, a), b); }

Tensor& Tensor::add_(const Tensor& other, double alpha) const {
  if (alpha == 1.0) return binary_inplace(BinaryOp::add, *this, other, "add_");
  return binary_inplace(BinaryOp::add, *this, mul(other.detach(), alpha), "add_");
}
Tensor& Tensor::sub_(const Tensor& other) const {
  return binary_inplace(BinaryOp::sub, *this, other, "sub_");
}
Tensor& Tensor::mul_(const Tensor& other) const {
  return binary_inplace(BinaryOp::mul, *this, other, "mul_");
}
Tensor& Tensor::div_(const Tensor& other) const {
  return binary_inplace(BinaryOp::div, *this, other, "div_");
}
Tensor& Tensor::mul_(double v) const { return mul_(scalar_tensor(v, dtype(), device())); }
Tensor& Tensor::div_(double v) const { return div_(scalar_tensor(v, dtype(), device())); }
Tensor Tensor::pow(double e) const { return rg::pow(*this, e); }
Tensor Tensor::exp() const { return rg::exp(*this); }
Tensor Tensor::log() const { return rg::log(*this); }
Tensor Tensor::sqrt() const { return rg::sqrt(*this); }
Tensor Tensor::abs() const { return rg::abs(*this); }

}  // namespace rg
