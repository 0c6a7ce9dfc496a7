// Branch-free float exp and tanh that the compiler can vectorise: a loop calling them over
// an array becomes AVX/AVX-512 code (glibc's expf/tanhf are scalar calls, which made GELU
// and softmax compute-bound; see docs/performance.md). Host only; device code keeps expf.
//   exp_f32:  x = n ln2 + r with |r| <= ln2/2 (ln2 split in a high part exact in float and
//             a low part), e^r by its Taylor polynomial to r^7 (truncation < 6e-9 relative),
//             2^n as the product of two exponent-bit scalings so that results from 2^-150
//             (underflow to 0 / subnormals) to 2^128 (overflow to inf) come out right.
//   tanh_f32: odd in x; |x| < 0.5: the Taylor series of tanh to x^15 (truncation < 2e-8
//             relative); else 1 - 2 / (e^{2|x|} + 1), which has no cancellation there.
// Accuracy: within 2 ulp of the correctly rounded result over all floats (checked by
// tests/kernels_cpu/test_vec_math.cpp against double libm).
#pragma once
#include <bit>
#include <cstdint>

namespace rg::vec {

// exp_f32's constants, shared with the AVX-512 version of the cpu row kernels
// (kernels/cpu/row_math.h), which must give the same bits.
namespace exp_constants {
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f;  // ln 2 to 16 significant bits: n * kLn2Hi is exact
constexpr float kLn2Lo = 1.428606765330187e-06f;
constexpr float kLowest = -104.0f, kHighest = 89.0f;  // the clamp: e^x is 0 or inf beyond
// round to nearest by adding and subtracting 1.5 * 2^23 (floorf would not vectorise
// unless -fno-trapping-math; nearest rounding also keeps |r| <= ln2/2)
constexpr float kRound = 12582912.0f;
// Taylor coefficients 1/k!, k = 7..0, for Horner's scheme
constexpr float kTaylor[8] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                              1.0f / 6.0f,    0.5f,          1.0f,          1.0f};
}  // namespace exp_constants

inline float exp_f32(float x) {
  using namespace exp_constants;
  float xc = x < kLowest ? kLowest : (x > kHighest ? kHighest : x);
  float nf = __builtin_fmaf(xc, kLog2e, kRound) - kRound;
  float r = __builtin_fmaf(nf, -kLn2Hi, xc);
  r = __builtin_fmaf(nf, -kLn2Lo, r);
  float p = __builtin_fmaf(kTaylor[0], r, kTaylor[1]);  // written out: this loop must vectorise
  p = __builtin_fmaf(p, r, kTaylor[2]);
  p = __builtin_fmaf(p, r, kTaylor[3]);
  p = __builtin_fmaf(p, r, kTaylor[4]);
  p = __builtin_fmaf(p, r, kTaylor[5]);
  p = __builtin_fmaf(p, r, kTaylor[6]);
  p = __builtin_fmaf(p, r, kTaylor[7]);
  int32_t n = int32_t(nf), n1 = n / 2, n2 = n - n1;  // each in [-75, 65]: a normal power of 2
  float s1 = std::bit_cast<float>((n1 + 127) << 23), s2 = std::bit_cast<float>((n2 + 127) << 23);
  float y = p * s1 * s2;
  return x != x ? x : y;  // NaN stays NaN (the clamp above would have made it finite)
}

inline float tanh_f32(float x) {
  float a = x < 0.0f ? -x : x;
  float big = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  float a2 = a * a;  // tanh(a) = a + a^3 (c1 + a^2 (c2 + ...)), Taylor coefficients
  float p = -929569.0f / 638512875.0f;
  p = __builtin_fmaf(p, a2, 21844.0f / 6081075.0f);
  p = __builtin_fmaf(p, a2, -1382.0f / 155925.0f);
  p = __builtin_fmaf(p, a2, 62.0f / 2835.0f);
  p = __builtin_fmaf(p, a2, -17.0f / 315.0f);
  p = __builtin_fmaf(p, a2, 2.0f / 15.0f);
  p = __builtin_fmaf(p, a2, -1.0f / 3.0f);
  float small = __builtin_fmaf(a * a2, p, a);
  float t = a < 0.5f ? small : big;
  t = __builtin_copysignf(t, x);  // odd, and tanh(-0) = -0
  return x != x ? x : t;
}

}  // namespace rg::vec
