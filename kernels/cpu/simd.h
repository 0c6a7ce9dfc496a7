// One vector of f32 lanes for the hand-vectorised CPU kernels, in the capability's own
// instructions (kernels/cpu/capability.h): AVX-512 (16 lanes, masks in k registers) or
// AVX2 + FMA (8 lanes, masks as all-ones lanes). The kernels are written once against these
// names; the baseline build has no vectors (kVectors false) and takes the kernels' plain
// loops instead. Each operation is one instruction or a short fixed sequence, so a kernel's
// rounding is the same at every width: fmadd is one fused rounding, the masked loads never
// touch memory outside their lanes.
#pragma once
#include <cstdint>

#include "kernels/cpu/capability.h"
#if defined(__AVX2__)
// GCC 12 warns inside its own intrinsics (`__m512 __Y = __Y;`) at the header's lines.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace rg::cpu::RG_CPU_CAP::simd {

#if defined(__AVX512F__)
constexpr bool kVectors = true;
constexpr int kLanes = 16;
using F = __m512;
using D = __m512d;       // kLanes / 2 double lanes
using Mask = __mmask16;  // a bit per lane
inline F zero() { return _mm512_setzero_ps(); }
inline F set1(float v) { return _mm512_set1_ps(v); }
inline F load(const float* p) { return _mm512_loadu_ps(p); }
inline F load_aligned(const float* p) { return _mm512_load_ps(p); }
inline void store(float* p, F v) { _mm512_storeu_ps(p, v); }
inline F add(F a, F b) { return _mm512_add_ps(a, b); }
inline F sub(F a, F b) { return _mm512_sub_ps(a, b); }
inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
inline F div(F a, F b) { return _mm512_div_ps(a, b); }
inline F min(F a, F b) { return _mm512_min_ps(a, b); }                // b where either is NaN
inline F max(F a, F b) { return _mm512_max_ps(a, b); }                // b where either is NaN
inline F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }    // a b + c
inline F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a b
inline F abs(F a) { return _mm512_abs_ps(a); }
inline Mask all_lanes() { return Mask(0xffff); }
inline Mask first_lanes(int64_t n) { return Mask((1u << n) - 1); }  // n < kLanes
inline F load_masked(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
inline void store_masked(float* p, Mask m, F v) { _mm512_mask_storeu_ps(p, m, v); }
inline F zero_outside(Mask m, F v) { return _mm512_maskz_mov_ps(m, v); }
inline Mask less_than(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline F select(Mask m, F if_false, F if_true) {
  return _mm512_mask_blend_ps(m, if_false, if_true);
}
// p * 2^n for integral n in [-150, 128] (exp's last step): one rounding.
inline F scale_by_pow2(F p, F n) { return _mm512_scalef_ps(p, n); }
// 1 / d to about 2^-27: the 14-bit estimate and one Newton step.
inline F reciprocal(F d) {
  const F t = _mm512_rcp14_ps(d);
  return fmadd(t, fnmadd(d, t, set1(1.0f)), t);
}
inline D zero_double() { return _mm512_setzero_pd(); }
// The lanes of e added to the double lanes (low: the first half, high: the second).
inline void add_to_double_lanes(F e, D& low, D& high) {
  low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
  high = _mm512_add_pd(
      high, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
}
inline void store_double(double* p, D v) { _mm512_storeu_pd(p, v); }
inline D add_double(D a, D b) { return _mm512_add_pd(a, b); }
#elif defined(__AVX2__)
constexpr bool kVectors = true;
constexpr int kLanes = 8;
using F = __m256;
using D = __m256d;
using Mask = __m256;  // all ones in a lane that is in
inline F zero() { return _mm256_setzero_ps(); }
inline F set1(float v) { return _mm256_set1_ps(v); }
inline F load(const float* p) { return _mm256_loadu_ps(p); }
inline F load_aligned(const float* p) { return _mm256_load_ps(p); }
inline void store(float* p, F v) { _mm256_storeu_ps(p, v); }
inline F add(F a, F b) { return _mm256_add_ps(a, b); }
inline F sub(F a, F b) { return _mm256_sub_ps(a, b); }
inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
inline F div(F a, F b) { return _mm256_div_ps(a, b); }
inline F min(F a, F b) { return _mm256_min_ps(a, b); }  // b where either is NaN
inline F max(F a, F b) { return _mm256_max_ps(a, b); }  // b where either is NaN
inline F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
inline F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
inline F abs(F a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }
inline Mask all_lanes() { return _mm256_castsi256_ps(_mm256_set1_epi32(-1)); }
inline Mask first_lanes(int64_t n) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane));
}
inline F load_masked(Mask m, const float* p) {
  return _mm256_maskload_ps(p, _mm256_castps_si256(m));
}
inline void store_masked(float* p, Mask m, F v) {
  _mm256_maskstore_ps(p, _mm256_castps_si256(m), v);
}
inline F zero_outside(Mask m, F v) { return _mm256_and_ps(m, v); }
inline Mask less_than(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline F select(Mask m, F if_false, F if_true) { return _mm256_blendv_ps(if_false, if_true, m); }
// p * 2^n for integral n in [-150, 128]: as vec::exp_f32, p * 2^(n/2) * 2^(n - n/2), each
// factor a normal power of 2, so the one rounding is the last product's (bit for bit the same).
inline F scale_by_pow2(F p, F n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(_mm256_sub_epi32(ni, _mm256_srai_epi32(ni, 31)), 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const F s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const F s2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
  return mul(mul(p, s1), s2);
}
inline F reciprocal(F d) { return div(set1(1.0f), d); }  // exact: AVX2's estimate has 12 bits
inline D zero_double() { return _mm256_setzero_pd(); }
inline void add_to_double_lanes(F e, D& low, D& high) {
  low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
  high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}
inline void store_double(double* p, D v) { _mm256_storeu_pd(p, v); }
inline D add_double(D a, D b) { return _mm256_add_pd(a, b); }
#else
constexpr bool kVectors = false;
constexpr int kLanes = 1;
#endif

}  // namespace rg::cpu::RG_CPU_CAP::simd
