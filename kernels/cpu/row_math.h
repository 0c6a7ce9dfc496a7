// f32 row primitives for the row kernels (softmax, cross-entropy, layernorm): each is one
// SIMD pass over a contiguous row. exp is core/vec_math.h's vectorisable exp_f32; sums
// accumulate in double (one double lane per float lane; `omp simd` lets the compiler split the
// sum into lanes, so the order differs from a sequential sum only at double rounding, far
// below float resolution). The f64 kernels keep their sequential loops.
#pragma once
#include <cstdint>
#include <limits>

#include "core/vec_math.h"

namespace rg::cpu::row {

// max of x[0..n), -inf for an empty row; NaN entries are skipped as std::max skips them
inline float max(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// sum of exp(x - shift); writes the exps to y when y is not null
inline double exp_sum(float* y, const float* x, int64_t n, float shift) {
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
}

// y = exp(x - shift), no sum (attention's backward recomputing probabilities)
inline void exp_shift(float* y, const float* x, int64_t n, float shift) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vec::exp_f32(x[i] - shift);
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
