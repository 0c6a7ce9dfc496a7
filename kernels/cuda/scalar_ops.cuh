// The scalar functions of the UnaryOp/BinaryOp entries, in the arithmetic type A (float,
// double or int64_t; see acc_t). Integer inputs to transcendental functions go through
// double. gelu is the tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Backward ops take (grad, x) for gelu/relu and (grad, y = forward output) for tanh/sigmoid.
#pragma once
#include "kernels/cuda/common.cuh"

namespace rg::RG_BACKEND {

// Overloads that pick the f32 or f64 libm function in both builds.
#define RG_MATH1(name, f32, f64)                      \
  RG_HD inline float name(float x) { return f32(x); } \
  RG_HD inline double name(double x) { return f64(x); }
RG_MATH1(m_exp, expf, exp)
RG_MATH1(m_log, logf, log)
RG_MATH1(m_sqrt, sqrtf, sqrt)
RG_MATH1(m_tanh, tanhf, tanh)
RG_MATH1(m_sin, sinf, sin)
RG_MATH1(m_cos, cosf, cos)
RG_MATH1(m_abs, fabsf, fabs)
#undef RG_MATH1
RG_HD inline float m_pow(float a, float b) { return powf(a, b); }
RG_HD inline double m_pow(double a, double b) { return pow(a, b); }

template <typename A>
RG_HD inline bool is_nan(A x) {
  return x != x;
}

template <typename F>
RG_HD inline F gelu_of(F x) {
  const F k0 = F(0.7978845608028654), k1 = F(0.044715);
  return F(0.5) * x * (F(1) + m_tanh(k0 * (x + k1 * x * x * x)));
}
template <typename F>
RG_HD inline F gelu_grad_of(F x) {
  const F k0 = F(0.7978845608028654), k1 = F(0.044715);
  F t = m_tanh(k0 * (x + k1 * x * x * x));
  return F(0.5) * (F(1) + t) + F(0.5) * x * (F(1) - t * t) * k0 * (F(1) + F(3) * k1 * x * x);
}

// Floating functions; for integer A computed in double and truncated back.
template <typename A>
RG_HD inline A unary_float(UnaryOp op, A a) {
  using F = std::conditional_t<std::is_same_v<A, float>, float, double>;
  F x = static_cast<F>(a);
  F r;
  switch (op) {
    case UnaryOp::exp:
      r = m_exp(x);
      break;
    case UnaryOp::log:
      r = m_log(x);
      break;
    case UnaryOp::sqrt:
      r = m_sqrt(x);
      break;
    case UnaryOp::rsqrt:
      r = F(1) / m_sqrt(x);
      break;
    case UnaryOp::tanh:
      r = m_tanh(x);
      break;
    case UnaryOp::sigmoid:
      r = F(1) / (F(1) + m_exp(-x));
      break;
    case UnaryOp::gelu:
      r = gelu_of(x);
      break;
    case UnaryOp::sin:
      r = m_sin(x);
      break;
    case UnaryOp::cos:
      r = m_cos(x);
      break;
    case UnaryOp::reciprocal:
      r = F(1) / x;
      break;
    default:
      r = x;
      break;
  }
  return static_cast<A>(r);
}

template <typename A>
RG_HD inline A unary_apply(UnaryOp op, A x) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::abs:
      return x < A(0) ? -x : x;
    case UnaryOp::sign:
      return A((x > A(0)) - (x < A(0)));
    case UnaryOp::relu:
      return x > A(0) ? x : A(0);
    case UnaryOp::square:
      return x * x;
    case UnaryOp::logical_not:
      return A(x == A(0));
    default:
      return unary_float(op, x);
  }
}

template <typename A>
RG_HD inline bool compare_apply(BinaryOp op, A a, A b) {
  switch (op) {
    case BinaryOp::eq:
      return a == b;
    case BinaryOp::ne:
      return a != b;
    case BinaryOp::lt:
      return a < b;
    case BinaryOp::le:
      return a <= b;
    case BinaryOp::gt:
      return a > b;
    case BinaryOp::ge:
      return a >= b;
    default:
      return false;
  }
}

template <typename A>
RG_HD inline A binary_apply(BinaryOp op, A a, A b) {
  using F = std::conditional_t<std::is_same_v<A, float>, float, double>;
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      if constexpr (std::is_integral_v<A>)
        return b == 0 ? A(0) : A(a / b);  // no SIGFPE on sim
      else
        return a / b;
    case BinaryOp::pow:
      return static_cast<A>(m_pow(F(a), F(b)));
    case BinaryOp::maximum:
      return is_nan(a) ? a : (is_nan(b) ? b : (a < b ? b : a));
    case BinaryOp::minimum:
      return is_nan(a) ? a : (is_nan(b) ? b : (b < a ? b : a));
    case BinaryOp::gelu_backward:
      return static_cast<A>(F(a) * gelu_grad_of(F(b)));
    case BinaryOp::relu_backward:
      return b > A(0) ? a : A(0);
    case BinaryOp::tanh_backward:
      return a * (A(1) - b * b);
    case BinaryOp::sigmoid_backward:
      return a * b * (A(1) - b);
    default:
      return A(compare_apply(op, a, b));
  }
}

}  // namespace rg::RG_BACKEND
