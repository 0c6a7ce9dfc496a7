// Elementwise ops and their derivatives. Binary ops broadcast (NumPy rules) and promote
// dtypes (bool < int < float; true division and pow of integers give float32). The
// gradient of a broadcast input is summed back to its shape (sum_to).
#include <cmath>

#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

bool produces_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: case UnaryOp::abs: case UnaryOp::sign: case UnaryOp::relu:
    case UnaryOp::square: case UnaryOp::logical_not:
      return false;
    default:
      return true;
  }
}

// Runs the kernel with no graph: inputs already on one device and of one dtype.
Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name(op));
  Tensor out = empty(shape, is_comparison(op) ? DType::b8 : a.dtype(), a.device());
  if (out.numel())
    RG_KERNEL(a.device(), binary)(op, out, expand(a.detach(), shape), expand(b.detach(), shape));
  return out;
}

Tensor unary_raw(UnaryOp op, const Tensor& x) {
  Tensor out = empty(x.shape(), op == UnaryOp::logical_not ? DType::b8 : x.dtype(), x.device());
  if (out.numel()) RG_KERNEL(x.device(), unary)(op, out, x);
  return out;
}

Tensor scalar_like(const Tensor& t, double value) {
  DType dt = is_floating(t.dtype()) || value == std::floor(value) ? t.dtype() : DType::f32;
  if (t.dtype() == DType::b8) dt = value == std::floor(value) ? DType::i64 : DType::f32;
  return scalar_tensor(value, dt, t.device());
}

Tensor binary_op(BinaryOp op, const Tensor& a_in, const Tensor& b_in, double alpha = 1.0) {
  const char* name = op_name(op);
  check_defined(name, a_in, "first input");
  check_defined(name, b_in, "second input");
  check_same_device(name, a_in, b_in);
  DType ct = promote_types(a_in.dtype(), b_in.dtype());
  if ((op == BinaryOp::div || op == BinaryOp::pow) && !is_floating(ct)) ct = DType::f32;
  if (ct == DType::b8 && !is_comparison(op)) ct = DType::i64;
  Tensor a = a_in.to(ct), b = b_in.to(ct);
  if (alpha != 1.0) b = mul(b, alpha);
  Tensor out = binary_raw(op, a, b);
  if (is_comparison(op) || !needs_grad({a, b})) return out;

  Shape sa = a.shape(), sb = b.shape();
  SavedTensor saved_a(a, name), saved_b(b, name), saved_out(out, name);
  bool need_a = a.requires_grad(), need_b = b.requires_grad();
  record(name, out, {a, b}, [=](const Tensor& g) -> std::vector<Tensor> {
    Tensor ga, gb;
    switch (op) {
      case BinaryOp::add:
        ga = g, gb = g;
        break;
      case BinaryOp::sub:
        ga = g, gb = need_b ? neg(g) : Tensor();
        break;
      case BinaryOp::mul:
        if (need_a) ga = mul(g, saved_b.get());
        if (need_b) gb = mul(g, saved_a.get());
        break;
      case BinaryOp::div: {
        Tensor bv = saved_b.get();
        if (need_a) ga = div(g, bv);
        if (need_b) gb = neg(div(mul(g, saved_a.get()), mul(bv, bv)));
        break;
      }
      case BinaryOp::pow: {
        Tensor av = saved_a.get(), bv = saved_b.get();
        if (need_a) ga = mul(g, mul(bv, pow(av, sub(bv, scalar_like(bv, 1)))));
        if (need_b) gb = mul(g, mul(saved_out.get(), log(av)));
        break;
      }
      case BinaryOp::maximum:
      case BinaryOp::minimum: {
        Tensor av = saved_a.get(), bv = saved_b.get();
        Tensor pick_a = op == BinaryOp::maximum ? ge(av, bv) : le(av, bv);
        Tensor zero = zeros({}, g.dtype(), g.device());
        ga = where(pick_a, g, zero);
        gb = where(pick_a, zero, g);
        break;
      }
      default:
        RG_FAIL(op_name(op), ": no derivative");
    }
    return {ga.defined() ? sum_to(ga, sa) : ga, gb.defined() ? sum_to(gb, sb) : gb};
  });
  return out;
}

Tensor unary_op(UnaryOp op, const Tensor& x_in) {
  const char* name = op_name(op);
  check_defined(name, x_in, "input");
  Tensor x = x_in;
  if (op == UnaryOp::logical_not) x = x_in.to(DType::b8);
  else if (produces_float(op) && !is_floating(x.dtype())) x = x_in.to(DType::f32);
  RG_CHECK(x.dtype() != DType::b8 || op == UnaryOp::logical_not, name,
           ": not supported for bool tensors");
  Tensor out = unary_raw(op, x);
  if (op == UnaryOp::logical_not || op == UnaryOp::sign || !needs_grad({x})) return out;

  SavedTensor saved_x(x, name), saved_y(out, name);
  record(name, out, {x}, [=](const Tensor& g) -> std::vector<Tensor> {
    switch (op) {
      case UnaryOp::neg: return {neg(g)};
      case UnaryOp::exp: return {mul(g, saved_y.get())};
      case UnaryOp::log: return {div(g, saved_x.get())};
      case UnaryOp::sqrt: return {div(mul(g, 0.5), saved_y.get())};
      case UnaryOp::rsqrt: {
        Tensor y = saved_y.get();
        return {mul(mul(g, -0.5), mul(y, mul(y, y)))};
      }
      case UnaryOp::abs: return {mul(g, sign(saved_x.get()))};
      case UnaryOp::tanh: return {binary_raw(BinaryOp::tanh_backward, g, saved_y.get())};
      case UnaryOp::sigmoid: return {binary_raw(BinaryOp::sigmoid_backward, g, saved_y.get())};
      case UnaryOp::relu: return {binary_raw(BinaryOp::relu_backward, g, saved_x.get())};
      case UnaryOp::gelu: return {binary_raw(BinaryOp::gelu_backward, g, saved_x.get())};
      case UnaryOp::sin: return {mul(g, cos(saved_x.get()))};
      case UnaryOp::cos: return {neg(mul(g, sin(saved_x.get())))};
      case UnaryOp::square: return {mul(mul(g, 2.0), saved_x.get())};
      case UnaryOp::reciprocal: {
        Tensor y = saved_y.get();
        return {neg(mul(g, mul(y, y)))};
      }
      default: RG_FAIL(op_name(op), ": no derivative");
    }
  });
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

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) { return binary_op(BinaryOp::add, a, b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::ge, a, b); }
Tensor add(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }

Tensor pow(const Tensor& a, double exponent) {
  Tensor x = is_floating(a.dtype()) ? a : a.to(DType::f32);
  Tensor out = binary_raw(BinaryOp::pow, x, scalar_tensor(exponent, x.dtype(), x.device()));
  if (needs_grad({x})) {
    SavedTensor saved_x(x, "pow");
    record("pow", out, {x}, [saved_x, exponent](const Tensor& g) {
      return std::vector{mul(g, mul(pow(saved_x.get(), exponent - 1), exponent))};
    });
  }
  return out;
}

Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::rsqrt, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::abs, x); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::sign, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::sigmoid, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, x); }
Tensor gelu(const Tensor& x) { return unary_op(UnaryOp::gelu, x); }
Tensor sin(const Tensor& x) { return unary_op(UnaryOp::sin, x); }
Tensor cos(const Tensor& x) { return unary_op(UnaryOp::cos, x); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::square, x); }
Tensor reciprocal(const Tensor& x) { return unary_op(UnaryOp::reciprocal, x); }
Tensor logical_not(const Tensor& x) { return unary_op(UnaryOp::logical_not, x); }

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
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = empty(shape, ct, a.device());
  if (out.numel())
    RG_KERNEL(a.device(), where)(out, expand(cond.detach(), shape), expand(a.detach(), shape),
                                 expand(b.detach(), shape));
  if (needs_grad({a, b})) {
    SavedTensor saved_cond(cond, "where");
    Shape sa = a.shape(), sb = b.shape();
    record("where", out, {a, b}, [saved_cond, sa, sb](const Tensor& g) {
      Tensor c = saved_cond.get();
      Tensor zero = zeros({}, g.dtype(), g.device());
      return std::vector{sum_to(where(c, g, zero), sa), sum_to(where(c, zero, g), sb)};
    });
  }
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
Tensor& Tensor::sub_(const Tensor& other) const { return binary_inplace(BinaryOp::sub, *this, other, "sub_"); }
Tensor& Tensor::mul_(const Tensor& other) const { return binary_inplace(BinaryOp::mul, *this, other, "mul_"); }
Tensor& Tensor::div_(const Tensor& other) const { return binary_inplace(BinaryOp::div, *this, other, "div_"); }
Tensor& Tensor::mul_(double v) const { return mul_(scalar_tensor(v, dtype(), device())); }
Tensor& Tensor::div_(double v) const { return div_(scalar_tensor(v, dtype(), device())); }
Tensor Tensor::pow(double e) const { return rg::pow(*this, e); }
Tensor Tensor::exp() const { return rg::exp(*this); }
Tensor Tensor::log() const { return rg::log(*this); }
Tensor Tensor::sqrt() const { return rg::sqrt(*this); }
Tensor Tensor::abs() const { return rg::abs(*this); }

}  // namespace rg
