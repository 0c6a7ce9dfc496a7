// f32 row primitives for the row kernels (softmax, cross-entropy, layernorm, attention): each
// is one SIMD pass over a contiguous row. exp is core/vec_math.h's exp_f32: with AVX-512 or
// AVX2 its vector form exp_vec below (kernels/cpu/simd.h), else the compiler's vectorisation
// of the scalar function. Sums
// accumulate in double (one double lane per float lane; `omp simd` lets the compiler split the
// sum into lanes, so the order differs from a sequential sum only at double rounding, far
// below float resolution), except that the vector exp_sum adds blocks of 4 vectors in float
// first (under one float ulp, see there). The f64 kernels keep their sequential loops.
#pragma once
#include <cstdint>
#include <limits>

#include "core/vec_math.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/simd.h"

namespace rg::cpu::RG_CPU_CAP::row {

#if RG_CPU_CAP_LEVEL > 0
using simd::F;
using simd::Mask;

// vec::exp_f32 on a vector in the capability's own instructions, with the same bits: the
// clamp by min/max (max(c, x) passes a NaN x through, so NaN stays NaN, its payload not kept),
// the same reduction and polynomial, and 2^n by simd::scale_by_pow2, one rounding as
// exp_f32's two exact power-of-2 products then its one rounding.
// The compiler's vectorisation of exp_f32 took 45 instructions a vector (blends for the
// clamp, integer halving of n), this 14 with AVX-512.
inline F exp_vec(F x) {
  using namespace vec::exp_constants;
  using namespace simd;
  const F xc = min(set1(kHighest), max(set1(kLowest), x));
  const F nf = sub(fmadd(xc, set1(kLog2e), set1(kRound)), set1(kRound));
  F r = fmadd(nf, set1(-kLn2Hi), xc);
  r = fmadd(nf, set1(-kLn2Lo), r);
  F p = fmadd(set1(kTaylor[0]), r, set1(kTaylor[1]));
  for (int k = 2; k < 8; ++k) p = fmadd(p, r, set1(kTaylor[k]));
  return scale_by_pow2(p, nf);
}

// f(index, lanes of x - shift, lane mask) for each vector of the row [0, n): whole vectors
// unmasked, then the tail (if any) masked, its missing lanes read as 0 (and never loaded).
template <typename Fn>
inline void for_each_vector(const float* x, int64_t n, float shift, Fn f) {
  using namespace simd;
  const F s = set1(shift);
  constexpr int64_t L = kLanes;
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {  // two at a time: their instruction chains interleave
    f(i, sub(load(x + i), s), all_lanes());
    f(i + L, sub(load(x + i + L), s), all_lanes());
  }
  for (; i + L <= n; i += L) f(i, sub(load(x + i), s), all_lanes());
  if (i < n) {
    const Mask m = first_lanes(n - i);
    f(i, sub(load_masked(m, x + i), s), m);
  }
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
inline double exp_sum_vec(float* y, const float* x, int64_t n, float shift, const float* next_row) {
  using namespace simd;
  constexpr int64_t L = kLanes;
  D low = zero_double(), high = zero_double();
  const F s = set1(shift);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    F e[4];
    for (int k = 0; k < 4; ++k) {
      if (next_row) prefetch_line(next_row + i + L * k);
      e[k] = exp_vec(sub(load(x + i + L * k), s));
      if (y) store(y + i + L * k, e[k]);
    }
    add_to_double_lanes(add(add(e[0], e[1]), add(e[2], e[3])), low, high);
  }
  for_each_vector(x + i, n - i, shift, [&](int64_t j, F v, Mask m) {
    if (next_row) prefetch_line(next_row + i + j);
    const F e = zero_outside(m, exp_vec(v));
    if (y) store_masked(y + i + j, m, e);
    add_to_double_lanes(e, low, high);
  });
  double lanes[kLanes / 2];  // (not a reduce intrinsic: GCC 12 warns inside AVX-512's)
  store_double(lanes, add_double(low, high));
  double sum = 0;
  for (double lane : lanes) sum += lane;
  return sum;
}
#endif

// max of x[0..n), -inf for an empty row; NaN entries are skipped as std::max skips them
inline float max(const float* x, int64_t n) {
#if RG_CPU_CAP_LEVEL > 0
  // Four running maxima (one was a chain of dependent maxima, 4 cycles a vector);
  // simd::max(v, m) gives m where v is NaN; a tail's missing lanes are -inf.
  using namespace simd;
  constexpr int64_t L = kLanes;
  const F lowest = set1(-std::numeric_limits<float>::infinity());
  F m[4] = {lowest, lowest, lowest, lowest};
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L)
    for (int k = 0; k < 4; ++k) m[k] = simd::max(load(x + i + L * k), m[k]);
  for (; i < n; i += L) {
    const Mask lanes = n - i >= L ? all_lanes() : first_lanes(n - i);
    m[0] = simd::max(select(lanes, lowest, load_masked(lanes, x + i)), m[0]);
  }
  float all[kLanes];
  store(all, simd::max(simd::max(m[0], m[1]), simd::max(m[2], m[3])));
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
// exp_sum_vec (a hint only; unused without vectors).
inline double exp_sum(float* y, const float* x, int64_t n, float shift,
                      const float* next_row = nullptr) {
#if RG_CPU_CAP_LEVEL > 0
  return exp_sum_vec(y, x, n, shift, next_row);
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
#if RG_CPU_CAP_LEVEL > 0
  for_each_vector(x, n, shift,
                  [&](int64_t i, F v, Mask m) { simd::store_masked(y + i, m, exp_vec(v)); });
#else
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vec::exp_f32(x[i] - shift);
#endif
}

// y = exp((x - shift) - offset) * scale (cross-entropy's backward: softmax times the loss
// gradient, from the row's max and log-sum-exp kept apart)
inline void scaled_exp(float* y, const float* x, int64_t n, float shift, float offset,
                       float scale) {
#if RG_CPU_CAP_LEVEL > 0
  using namespace simd;
  const F o = set1(offset), g = set1(scale);
  for_each_vector(x, n, shift, [&](int64_t i, F v, Mask m) {
    store_masked(y + i, m, mul(exp_vec(sub(v, o)), g));
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

}  // namespace rg::cpu::RG_CPU_CAP::row
