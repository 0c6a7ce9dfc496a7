// GELU and its gradient on contiguous f32 rows with AVX-512 or AVX2, on row_math.h's exp_vec: the
// tanh approximation (the op table's gelu_tanh and g * gelu_tanh_grad, at a third of the
// instructions of the compiler's vectorised exp_f32) and the exact GELU (gelu_erf: the table's
// float row calls libm's erff and expf per element, 20% of a 4 x 256 GPT's DDP step).
// elementwise.cpp's row_kernel calls them; other builds and strided tensors take the table's
// generated loops.
//
// Exact GELU is x Phi(x), Phi(x) = 1 - erfc(z) / 2 for x >= 0 and erfc(z) / 2 below, with
// z = |x| / sqrt(2). erfc comes from the classic form erfc(z) = t exp(-z^2 + P(t)),
// t = 1 / (1 + z / 2) (as Numerical Recipes' erfcc), with our own polynomial: P of degree 8
// in s = t - kErfcCenter, fitted (iteratively reweighted least squares in double, on
// Chebyshev nodes of z in [0, 4.5]) to log(erfc(z) / t) + z^2, its error there 1.4e-8. Beyond
// 4.5 erfc < 2e-10, so the extrapolated P costs nothing visible, and z = inf gives t = 0 and
// exp_vec(-inf) = 0: Phi is exactly 0 or 1. Taking erfc(z) / 2 itself for negative x keeps the
// small values of Phi relatively exact where the table's 1 + erf(x / sqrt 2) cancels. Near 0
// a polynomial of its own (normal_cdf).
#pragma once
#include <cstdint>

#include "core/elementwise_scalar.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/row_math.h"

namespace rg::cpu::RG_CPU_CAP::row {

#if RG_CPU_CAP_LEVEL > 0
// GELU = x sigma(2u) with sigma(2u) = 1 / (1 + e^{-2u}), u = sqrt(2/pi) (x + 0.044715 x^3).
// The same formulas as the table's, with the roundings the compiler gives the scalar rows of
// the vector capabilities (which contract a * b + c into an FMA: kernels/cpu/meson.build), so
// strided and contiguous tensors agree (tests/kernels_cpu/test_gelu_rows.cpp): u's cubic is
// large where the exponent is, and e^{-2u} turns one rounding of u there into 1e-5 of the
// result.
inline F gelu_tanh_sigmoid(F x) {
  using namespace simd;
  const F cubic = mul(mul(set1(float(scalar::kGeluCubic)), x), x);
  const F inner = fmadd(cubic, x, x);
  const F e = exp_vec(mul(set1(float(-2 * scalar::kGeluScale)), inner));
  const F one = set1(1.0f);
  return div(one, add(one, e));
}

inline void gelu_tanh(float* y, const float* x, int64_t n) {
  for_each_vector(x, n, 0.0f, [&](int64_t i, F v, Mask m) {
    simd::store_masked(y + i, m, simd::mul(v, gelu_tanh_sigmoid(v)));
  });
}

// dx = g * (s + 2 x s (1 - s) du/dx), du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
inline void gelu_tanh_backward(float* dx, const float* g, const float* x, int64_t n) {
  using namespace simd;
  const F one = set1(1.0f), two = set1(2.0f);
  const F scale = set1(float(scalar::kGeluScale));
  const F cubic3 = set1(float(3 * scalar::kGeluCubic));
  for_each_vector(x, n, 0.0f, [&](int64_t i, F v, Mask m) {
    const F s = gelu_tanh_sigmoid(v);
    const F du = mul(scale, fmadd(mul(cubic3, v), v, one));
    const F slope = mul(mul(mul(two, v), s), sub(one, s));
    const F grad = fmadd(slope, du, s);
    store_masked(dx + i, m, mul(load_masked(m, g + i), grad));
  });
}

// P(s) of the header, highest power first.
inline constexpr float kErfcCenter = 0.65384615f;  // the middle of t's range [1 / 3.25, 1]
inline constexpr float kErfcPoly[9] = {0.15624091f, -0.13332863f, -0.14510654f,
                                       0.24953170f, 0.06249141f,  -0.40303970f,
                                       0.00448721f, 1.37543690f,  -0.46177411f};
// Near 0 (|x| < sqrt 2) Phi(x) = 1/2 + x R(x^2), R fitted as P (error 1.2e-9), highest power
// first: one rounding at the end, where 1 - erfc(z) / 2 would carry the erfc's few ulps into
// the gradient's half (the f32 GPT's accumulation test saw AdamW amplify them).
inline constexpr float kNearZeroLimit = 1.41421356f;
inline constexpr float kNearZeroPoly[7] = {4.3388383e-07f,  -8.8501965e-06f, 1.1464718e-04f,
                                           -1.1867824e-03f, 9.9733742e-03f,  -6.6490360e-02f,
                                           3.9894229e-01f};

// Phi(x) on a vector; *gauss (if not null) receives e^{-x^2/2}, the density's exponential.
inline F normal_cdf(F x, F* gauss = nullptr) {
  using namespace simd;
  const F one = set1(1.0f), half = set1(0.5f);
  const F z = mul(abs(x), set1(float(scalar::kSqrtHalf)));
  // t = 1 / d by simd::reciprocal (AVX-512: the 14-bit estimate and one Newton step, a
  // division took a quarter of the row's time; about 2^-27 off, far inside P's fit). z is
  // capped where erfc is long 0, so that z = inf gives no inf * 0 in the step (a NaN z caps
  // to the cap: x's NaN carries).
  const F d = fmadd(half, simd::min(z, set1(1e4f)), one);
  const F t = reciprocal(d);
  const F s = sub(t, set1(kErfcCenter));
  F p = set1(kErfcPoly[0]);
  for (int k = 1; k < 9; ++k) p = fmadd(p, s, set1(kErfcPoly[k]));
  const F minus_z2 = mul(sub(zero(), z), z);
  if (gauss) *gauss = exp_vec(minus_z2);
  const F half_erfc = mul(mul(half, t), exp_vec(add(minus_z2, p)));
  const F tails = select(less_than(x, zero()), sub(one, half_erfc), half_erfc);
  const F x2 = mul(x, x);
  F r = set1(kNearZeroPoly[0]);
  for (int k = 1; k < 7; ++k) r = fmadd(r, x2, set1(kNearZeroPoly[k]));
  return select(less_than(abs(x), set1(kNearZeroLimit)), tails, fmadd(x, r, half));
}

inline void gelu_erf(float* y, const float* x, int64_t n) {
  for_each_vector(x, n, 0.0f, [&](int64_t i, F v, Mask m) {
    simd::store_masked(y + i, m, simd::mul(v, normal_cdf(v)));
  });
}

// dx = g * (Phi(x) + x phi(x)), phi(x) = e^{-x^2/2} / sqrt(2 pi)
inline void gelu_erf_backward(float* dx, const float* g, const float* x, int64_t n) {
  using namespace simd;
  const F inv_sqrt_2pi = set1(float(scalar::kInvSqrt2Pi));
  for_each_vector(x, n, 0.0f, [&](int64_t i, F v, Mask m) {
    F gauss;
    const F cdf = normal_cdf(v, &gauss);
    const F grad = fmadd(mul(v, inv_sqrt_2pi), gauss, cdf);
    store_masked(dx + i, m, mul(load_masked(m, g + i), grad));
  });
}
#endif

}  // namespace rg::cpu::RG_CPU_CAP::row
