// GELU and its gradient on contiguous f32 rows with AVX-512, on row_math.h's exp16: the
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
// exp16(-inf) = 0: Phi is exactly 0 or 1. Taking erfc(z) / 2 itself for negative x keeps the
// small values of Phi relatively exact where the table's 1 + erf(x / sqrt 2) cancels. Near 0
// a polynomial of its own (normal_cdf16).
#pragma once
#include <cstdint>

#include "core/elementwise_scalar.h"
#include "kernels/cpu/row_math.h"

namespace rg::cpu::row {

#if defined(__AVX512F__)
// GELU = x sigma(2u) with sigma(2u) = 1 / (1 + e^{-2u}), u = sqrt(2/pi) (x + 0.044715 x^3).
// The same formulas as the table's; the compiler may contract the scalar rows' products
// differently, so results can differ from them in the last bit or two
// (tests/kernels_cpu/test_gelu_rows.cpp bounds it).
inline __m512 gelu_tanh_sigmoid16(__m512 x) {
  const __m512 cubic =
      _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(float(scalar::kGeluCubic)), x), x);
  const __m512 inner = _mm512_fmadd_ps(cubic, x, x);
  const __m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(float(-2 * scalar::kGeluScale)), inner));
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, e));
}

inline void gelu_tanh(float* y, const float* x, int64_t n) {
  for_each_vector(x, n, 0.0f, [&](int64_t i, __m512 v, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, gelu_tanh_sigmoid16(v)));
  });
}

// dx = g * (s + 2 x s (1 - s) du/dx), du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
inline void gelu_tanh_backward(float* dx, const float* g, const float* x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  const __m512 scale = _mm512_set1_ps(float(scalar::kGeluScale));
  const __m512 cubic3 = _mm512_set1_ps(float(3 * scalar::kGeluCubic));
  for_each_vector(x, n, 0.0f, [&](int64_t i, __m512 v, __mmask16 m) {
    const __m512 s = gelu_tanh_sigmoid16(v);
    const __m512 du = _mm512_mul_ps(scale, _mm512_fmadd_ps(_mm512_mul_ps(cubic3, v), v, one));
    const __m512 slope =
        _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(two, v), s), _mm512_sub_ps(one, s));
    const __m512 grad = _mm512_fmadd_ps(slope, du, s);
    _mm512_mask_storeu_ps(dx + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, g + i), grad));
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

// Phi(x) on 16 lanes; *gauss (if not null) receives e^{-x^2/2}, the density's exponential.
inline __m512 normal_cdf16(__m512 x, __m512* gauss = nullptr) {
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(float(scalar::kSqrtHalf)));
  // t = 1 / d by the 14-bit reciprocal and one Newton step (a division took a quarter of the
  // row's time): about 2^-27 off, far inside P's fit. z is capped where erfc is long 0, so
  // that z = inf gives no inf * 0 in the step (a NaN z caps to the cap: x's NaN carries).
  const __m512 d = _mm512_fmadd_ps(half, _mm512_min_ps(z, _mm512_set1_ps(1e4f)), one);
  __m512 t = _mm512_rcp14_ps(d);
  t = _mm512_fmadd_ps(t, _mm512_fnmadd_ps(d, t, one), t);
  const __m512 s = _mm512_sub_ps(t, _mm512_set1_ps(kErfcCenter));
  __m512 p = _mm512_set1_ps(kErfcPoly[0]);
  for (int k = 1; k < 9; ++k) p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(kErfcPoly[k]));
  const __m512 minus_z2 = _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z);
  if (gauss) *gauss = exp16(minus_z2);
  const __m512 half_erfc = _mm512_mul_ps(_mm512_mul_ps(half, t), exp16(_mm512_add_ps(minus_z2, p)));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 tails = _mm512_mask_blend_ps(negative, _mm512_sub_ps(one, half_erfc), half_erfc);
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 r = _mm512_set1_ps(kNearZeroPoly[0]);
  for (int k = 1; k < 7; ++k) r = _mm512_fmadd_ps(r, x2, _mm512_set1_ps(kNearZeroPoly[k]));
  const __mmask16 near_zero =
      _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(kNearZeroLimit), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(near_zero, tails, _mm512_fmadd_ps(x, r, half));
}

inline void gelu_erf(float* y, const float* x, int64_t n) {
  for_each_vector(x, n, 0.0f, [&](int64_t i, __m512 v, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, normal_cdf16(v)));
  });
}

// dx = g * (Phi(x) + x phi(x)), phi(x) = e^{-x^2/2} / sqrt(2 pi)
inline void gelu_erf_backward(float* dx, const float* g, const float* x, int64_t n) {
  const __m512 inv_sqrt_2pi = _mm512_set1_ps(float(scalar::kInvSqrt2Pi));
  for_each_vector(x, n, 0.0f, [&](int64_t i, __m512 v, __mmask16 m) {
    __m512 gauss;
    const __m512 cdf = normal_cdf16(v, &gauss);
    const __m512 grad = _mm512_fmadd_ps(_mm512_mul_ps(v, inv_sqrt_2pi), gauss, cdf);
    _mm512_mask_storeu_ps(dx + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, g + i), grad));
  });
}
#endif

}  // namespace rg::cpu::row
