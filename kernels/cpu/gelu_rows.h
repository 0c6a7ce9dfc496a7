// GELU (tanh approximation) and its gradient on contiguous f32 rows with AVX-512, on
// row_math.h's exp16: the op table's float rows (core/elementwise_scalar.h's gelu_tanh and
// g * gelu_tanh_grad) at a third of the instructions of the compiler's vectorised exp_f32.
// elementwise.cpp's row_kernel calls them; other builds and strided tensors take the table's
// generated loops.
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
#endif

}  // namespace rg::cpu::row
