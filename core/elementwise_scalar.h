// The elementwise table's rows (core/op_table.h) as scalar functors, one struct per op,
// for the cpu kernels (g++) and the cuda/sim kernels (nvcc and g++): scalar::<name>_fn has
//   static constexpr UnaryOp/BinaryOp op; static constexpr DTypeRule rule;
//   forward(x) / forward(a, b)                  -> y, in the compute type T (bool for `boolean`)
//   gradient(g, x, y) / gradient<which>(g, a, b, y) -> T
// Kernels take the functor as a template parameter, so the op is fixed at compile time and
// each loop is a plain expression the compiler can vectorise. The math functions the rows
// are written in come first: float and double overloads that call the f32/f64 libm function
// on host and device alike.
#pragma once
#include <cmath>
#include <type_traits>

#include "core/op_table.h"
#if !defined(__CUDACC__)
#include "core/vec_math.h"
#endif

#if defined(__CUDACC__)
#define RG_SCALAR __host__ __device__ inline
#else
#define RG_SCALAR inline
#endif

namespace rg::scalar {

#define RG_MATH1(name, f32, f64)                     \
  RG_SCALAR float name(float x) { return ::f32(x); } \
  RG_SCALAR double name(double x) { return ::f64(x); }
RG_MATH1(log, logf, log)
RG_MATH1(sqrt, sqrtf, sqrt)
RG_MATH1(erf, erff, erf)
RG_MATH1(sin, sinf, sin)
RG_MATH1(cos, cosf, cos)
#undef RG_MATH1
// float exp and tanh: on the host the vectorisable versions of core/vec_math.h (within 2 ulp),
// so that the cpu kernels' loops over a row expression become SIMD code.
#if defined(__CUDACC__)
RG_SCALAR float exp(float x) { return ::expf(x); }
RG_SCALAR float tanh(float x) { return ::tanhf(x); }
#else
inline float exp(float x) { return vec::exp_f32(x); }
inline float tanh(float x) { return vec::tanh_f32(x); }
#endif
RG_SCALAR double exp(double x) { return ::exp(x); }
RG_SCALAR double tanh(double x) { return ::tanh(x); }
RG_SCALAR float pow(float a, float b) { return ::powf(a, b); }
RG_SCALAR double pow(double a, double b) { return ::pow(a, b); }

template <typename T>
RG_SCALAR bool is_nan(T x) {
  return x != x;
}
template <typename T>
RG_SCALAR T sign_of(T x) {
  return T((x > T(0)) - (x < T(0)));
}
template <typename T>
RG_SCALAR T sigmoid_of(T x) {
  return T(1) / (T(1) + exp(-x));
}

// GELU, exact: x * Phi(x) with Phi the standard normal CDF; its derivative Phi(x) + x * phi(x).
constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
template <typename T>
RG_SCALAR T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + erf(x * T(kSqrtHalf)));
}
template <typename T>
RG_SCALAR T gelu_erf_grad(T x) {
  return T(0.5) * (T(1) + erf(x * T(kSqrtHalf))) + x * T(kInvSqrt2Pi) * exp(T(-0.5) * x * x);
}

// GELU, tanh approximation (GPT-2): 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// computed as x sigma(2u) = x / (1 + e^{-2u}), its equal: one exp and one division instead of
// tanh's exp, division and polynomial (GELU took 5% of a GPT step on cpu), and no
// cancellation in 1 + tanh(u) for negative x. Derivative: s + 2 x s (1 - s) du/dx, s = sigma(2u).
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;
template <typename T>
RG_SCALAR T gelu_tanh_sigmoid(T x) {  // sigma(2u)
  return T(1) / (T(1) + exp(T(-2 * kGeluScale) * (x + T(kGeluCubic) * x * x * x)));
}
template <typename T>
RG_SCALAR T gelu_tanh(T x) {
  return x * gelu_tanh_sigmoid(x);
}
template <typename T>
RG_SCALAR T gelu_tanh_grad(T x) {
  T s = gelu_tanh_sigmoid(x);
  T du = T(kGeluScale) * (T(1) + T(3 * kGeluCubic) * x * x);  // du/dx
  return s + T(2) * x * s * (T(1) - s) * du;
}

// Passes a row's value through, failing to compile when the expression left type T (a bare
// double constant in a float row, say) — the row would silently compute in the wrong type.
template <DTypeRule rule, typename T, typename V>
RG_SCALAR V checked(V v) {
  using Want = std::conditional_t<rule == DTypeRule::boolean, bool, T>;
  static_assert(std::is_same_v<V, Want>,
                "an op-table expression must stay in its compute type T: write T(0.5), not 0.5");
  return v;
}

#define RG_UNARY_FUNCTOR(name, rule_, forward_expr, gradient_expr)          \
  struct name##_fn {                                                        \
    static constexpr UnaryOp op = UnaryOp::name;                            \
    static constexpr DTypeRule rule = DTypeRule::rule_;                     \
    template <typename T>                                                   \
    RG_SCALAR static auto forward(T x) {                                    \
      return checked<rule, T>(forward_expr);                                \
    }                                                                       \
    template <typename T>                                                   \
    RG_SCALAR static T gradient([[maybe_unused]] T g, [[maybe_unused]] T x, \
                                [[maybe_unused]] T y) {                     \
      return checked<DTypeRule::same, T>(gradient_expr);                    \
    }                                                                       \
  };
RG_UNARY_OPS(RG_UNARY_FUNCTOR)
#undef RG_UNARY_FUNCTOR

#define RG_BINARY_FUNCTOR(name, rule_, forward_expr, gradient_a, gradient_b)                      \
  struct name##_fn {                                                                              \
    static constexpr BinaryOp op = BinaryOp::name;                                                \
    static constexpr DTypeRule rule = DTypeRule::rule_;                                           \
    template <typename T>                                                                         \
    RG_SCALAR static auto forward(T a, T b) {                                                     \
      return checked<rule, T>(forward_expr);                                                      \
    }                                                                                             \
    template <int which, typename T>                                                              \
    RG_SCALAR static T gradient([[maybe_unused]] T g, [[maybe_unused]] T a, [[maybe_unused]] T b, \
                                [[maybe_unused]] T y) {                                           \
      if constexpr (which == 0)                                                                   \
        return checked<DTypeRule::same, T>(gradient_a);                                           \
      else                                                                                        \
        return checked<DTypeRule::same, T>(gradient_b);                                           \
    }                                                                                             \
  };
RG_BINARY_OPS(RG_BINARY_FUNCTOR)
#undef RG_BINARY_FUNCTOR

// Whether a kernel instantiates an op of `rule` for the storage type S (float, double, a bf16
// type, int32_t, int64_t or bool); the op layer converts other inputs before the call.
template <DTypeRule rule, typename S>
inline constexpr bool admits = std::is_same_v<S, bool> ? rule_takes_bool(rule)
                               : std::is_integral_v<S> ? rule_takes_integers(rule)
                                                       : true;

// Calls fn(Functor{}) with the functor of `op`: the one runtime switch, once per kernel call.
template <typename F>
decltype(auto) with_functor(UnaryOp op, F&& fn) {
  switch (op) {
#define RG_CASE(name, ...) \
  case UnaryOp::name:      \
    return fn(name##_fn{});
    RG_UNARY_OPS(RG_CASE)
#undef RG_CASE
  }
  RG_FAIL("unary: op ", static_cast<int>(op), " is not in the op table");
}
template <typename F>
decltype(auto) with_functor(BinaryOp op, F&& fn) {
  switch (op) {
#define RG_CASE(name, ...) \
  case BinaryOp::name:     \
    return fn(name##_fn{});
    RG_BINARY_OPS(RG_CASE)
#undef RG_CASE
  }
  RG_FAIL("binary: op ", static_cast<int>(op), " is not in the op table");
}

}  // namespace rg::scalar
