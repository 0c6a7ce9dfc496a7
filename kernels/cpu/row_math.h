// f32 row primitives for the row kernels (softmax, cross-entropy, layernorm, attention): each
// is one SIMD pass over a contiguous row. exp is core/vec_math.h's exp_f32: with AVX-512 its
// 16-lane form exp16 below, else the compiler's vectorisation of the scalar function. Sums
// accumulate in double (one double lane per float lane; `omp simd` lets the compiler split the
// sum into lanes, so the order differs from a sequential sum only at double rounding, far
// below float resolution), except that the AVX-512 exp_sum adds blocks of 4 vectors in float
// first (under one float ulp, see there). The f64 kernels keep their sequential loops.
#pragma once
#include <cstdint>
#include <limits>

#include "core/vec_math.h"
#include "kernels/cpu/avx512_intrinsics.h"

namespace rg::cpu::row {

#if defined(__AVX512F__)
// vec::exp_f32 on 16 lanes in AVX-512's own instructions, with the same bits: the clamp by
// min/max (max(c, x) passes a NaN x through, so NaN stays NaN, its payload not kept), the same
// reduction and polynomial, and 2^n by vscalefps, one rounding as exp_f32's two exact
// power-of-2 products then its one rounding.
// The compiler's vectorisation of exp_f32 took 45 instructions a vector (blends for the
// clamp, integer halving of n), this 14.
inline __m512 exp16(__m512 x) {
  using namespace vec::exp_constants;
  const auto c = [](float v) { return _mm512_set1_ps(v); };
  const __m512 xc = _mm512_min_ps(c(kHighest), _mm512_max_ps(c(kLowest), x));
  const __m512 nf = _mm512_sub_ps(_mm512_fmadd_ps(xc, c(kLog2e), c(kRound)), c(kRound));
  __m512 r = _mm512_fmadd_ps(nf, c(-kLn2Hi), xc);
  r = _mm512_fmadd_ps(nf, c(-kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(c(kTaylor[0]), r, c(kTaylor[1]));
  for (int k = 2; k < 8; ++k) p = _mm512_fmadd_ps(p, r, c(kTaylor[k]));
  return _mm512_scalef_ps(p, nf);
}

// The lanes of a vector holding the row's last `left` (< 16) elements.
inline __mmask16 tail_mask(int64_t left) { return __mmask16((1u << left) - 1); }

// f(16 lanes of x - shift, lane mask) for each vector of the row [0, n): whole vectors
// unmasked, then the tail (if any) masked, its missing lanes read as 0.
template <typename F>
inline void for_each_vector(const float* x, int64_t n, float shift, F f) {
  const __m512 s = _mm512_set1_ps(shift);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two at a time: their instruction chains interleave
    f(i, _mm512_sub_ps(_mm512_loadu_ps(x + i), s), __mmask16(0xffff));
    f(i + 16, _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), s), __mmask16(0xffff));
  }
  for (; i + 16 <= n; i += 16) f(i, _mm512_sub_ps(_mm512_loadu_ps(x + i), s), __mmask16(0xffff));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    f(i, _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s), m);
  }
}

// The 16 lanes of e added to the double lanes (low, high).
inline void add_to_double_lanes(__m512 e, __m512d& low, __m512d& high) {
  low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  high = _mm512_add_pd(
      high, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
}

// Asks for the cache line holding p in the first-level cache (no fault if p is past the end).
inline void prefetch_line(const float* p) { __builtin_prefetch(p, /*rw=*/0, /*locality=*/3); }

// exp(x - shift) of the row into y (when y is not null), returning the sum in double lanes.
// Four vectors' exps are first added in float, (e0 + e1) + (e2 + e3), two roundings deep (the
// block's relative error under 2^-23, about one float ulp, whatever the row's length), then the
// block goes to the double lanes: the conversions took a fifth of the pass when every vector
// went to double alone.
// next_row (may be null): n floats the caller reads next; one of its lines is prefetched with
// each vector computed here, so its memory reads hide behind these exps. (All of its lines at
// once, before this row, filled the load buffers and stalled: 7% faster, against 27% spread.)
inline double exp_sum_avx512(float* y, const float* x, int64_t n, float shift,
                             const float* next_row) {
  __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd();
  const __m512 s = _mm512_set1_ps(shift);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 e[4];
    for (int k = 0; k < 4; ++k) {
      if (next_row) prefetch_line(next_row + i + 16 * k);
      e[k] = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16 * k), s));
      if (y) _mm512_storeu_ps(y + i + 16 * k, e[k]);
    }
    add_to_double_lanes(_mm512_add_ps(_mm512_add_ps(e[0], e[1]), _mm512_add_ps(e[2], e[3])), low,
                        high);
  }
  for_each_vector(x + i, n - i, shift, [&](int64_t j, __m512 v, __mmask16 m) {
    if (next_row) prefetch_line(next_row + i + j);
    const __m512 e = _mm512_maskz_mov_ps(m, exp16(v));
    if (y) _mm512_mask_storeu_ps(y + i + j, m, e);
    add_to_double_lanes(e, low, high);
  });
  alignas(64) double lanes[8];  // (not _mm512_reduce_add_pd: GCC 12 warns inside it)
  _mm512_store_pd(lanes, _mm512_add_pd(low, high));
  double sum = 0;
  for (double lane : lanes) sum += lane;
  return sum;
}
#endif

// max of x[0..n), -inf for an empty row; NaN entries are skipped as std::max skips them
inline float max(const float* x, int64_t n) {
#if defined(__AVX512F__)
  // Four running maxima (one was a chain of dependent vmaxps, 4 cycles a vector);
  // _mm512_max_ps(v, m) gives m where v is NaN.
  __m512 m[4];
  for (auto& lane : m) lane = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 4; ++k) m[k] = _mm512_max_ps(_mm512_loadu_ps(x + i + 16 * k), m[k]);
  for (; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? __mmask16(0xffff) : tail_mask(n - i);
    m[0] = _mm512_mask_max_ps(m[0], lanes, _mm512_maskz_loadu_ps(lanes, x + i), m[0]);
  }
  alignas(64) float all[16];
  _mm512_store_ps(all, _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
  float best = all[0];
  for (float v : all) best = v > best ? v : best;
  return best;
#else
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
#endif
}

// sum of exp(x - shift); writes the exps to y when y is not null. next_row: see
// exp_sum_avx512 (a hint only; unused without AVX-512).
inline double exp_sum(float* y, const float* x, int64_t n, float shift,
                      const float* next_row = nullptr) {
#if defined(__AVX512F__)
  return exp_sum_avx512(y, x, n, shift, next_row);
#else
  (void)next_row;
  double s = 0;
  if (y) {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) {
      float e = vec::exp_f32(x[i] - shift);
      y[i] = e;
      s += double(e);
    }
  } else {
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; ++i) s += double(vec::exp_f32(x[i] - shift));
  }
  return s;
#endif
}

// y = exp(x - shift), no sum (attention's backward recomputing probabilities)
inline void exp_shift(float* y, const float* x, int64_t n, float shift) {
#if defined(__AVX512F__)
  for_each_vector(x, n, shift, [&](int64_t i, __m512 v, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, exp16(v));
  });
#else
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vec::exp_f32(x[i] - shift);
#endif
}

// y = exp((x - shift) - offset) * scale (cross-entropy's backward: softmax times the loss
// gradient, from the row's max and log-sum-exp kept apart)
inline void scaled_exp(float* y, const float* x, int64_t n, float shift, float offset,
                       float scale) {
#if defined(__AVX512F__)
  const __m512 o = _mm512_set1_ps(offset), g = _mm512_set1_ps(scale);
  for_each_vector(x, n, shift, [&](int64_t i, __m512 v, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(exp16(_mm512_sub_ps(v, o)), g));
  });
#else
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vec::exp_f32((x[i] - shift) - offset) * scale;
#endif
}

inline double sum(const float* x, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += double(x[i]);
  return s;
}

// sum of (x - mean)^2, in double
inline double centered_square_sum(const float* x, int64_t n, double mean) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    double d = double(x[i]) - mean;
    s += d * d;
  }
  return s;
}

inline double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// layernorm backward's two row sums, in double: of g = dy * w (w null: g = dy) and of
// g * xhat, xhat = (x - mean) * rstd. The branch on w is outside the loops: inside one loop
// with both reductions, GCC left the loop scalar (a chain of dependent double adds, 1.2 ns
// per element at GPT 4 x 256).
inline void layernorm_grad_sums(const float* dy, const float* w, const float* x, float mean,
                                float rstd, int64_t n, double* g_sum, double* gx_sum) {
  double a = 0, b = 0;
  if (w) {
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; ++i) {
      const float g = dy[i] * w[i];
      a += double(g);
      b += double(g * ((x[i] - mean) * rstd));
    }
  } else {
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; ++i) {
      a += double(dy[i]);
      b += double(dy[i] * ((x[i] - mean) * rstd));
    }
  }
  *g_sum = a;
  *gx_sum = b;
}

}  // namespace rg::cpu::row
