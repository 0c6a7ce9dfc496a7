// Transposes of f32 blocks (see transpose_f32.h). A 16 x 16 block goes through AVX-512
// registers: 32-bit interleaves of row pairs, 64-bit interleaves of pairs of those, then two
// rounds of 128-bit-lane shuffles, 16 loads and 16 stores in all. An 8 x 8 block through AVX2
// registers: the same two interleaves, then one round of 128-bit-lane permutes.
#include "kernels/cpu/transpose_f32.h"

#include "kernels/cpu/capability.h"
#include "kernels/cpu/simd.h"

namespace rg::cpu::RG_CPU_CAP {

#if defined(__AVX512F__)
void transpose_block(const float* source, int64_t source_stride, float* target,
                     int64_t target_stride) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(source + i * source_stride);
  for (int i = 0; i < 16; i += 2) {  // pairs of rows: (a0 b0 a1 b1 | a4 b4 a5 b5 | ...)
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // quads of rows: r[i + c] holds columns c, c+4, c+8, c+12
    const auto pd = [](__m512 v) { return _mm512_castps_pd(v); };
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  for (int c = 0; c < 4; ++c) {  // the four quads' 128-bit lanes of columns c, c+4, c+8, c+12
    const __m512 even_low = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    const __m512 odd_low = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    const __m512 even_high = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    const __m512 odd_high = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
    _mm512_storeu_ps(target + c * target_stride, _mm512_shuffle_f32x4(even_low, even_high, 0x88));
    _mm512_storeu_ps(target + (c + 8) * target_stride,
                     _mm512_shuffle_f32x4(even_low, even_high, 0xdd));
    _mm512_storeu_ps(target + (c + 4) * target_stride,
                     _mm512_shuffle_f32x4(odd_low, odd_high, 0x88));
    _mm512_storeu_ps(target + (c + 12) * target_stride,
                     _mm512_shuffle_f32x4(odd_low, odd_high, 0xdd));
  }
}
#elif defined(__AVX2__)
void transpose_block(const float* source, int64_t source_stride, float* target,
                     int64_t target_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(source + i * source_stride);
  for (int i = 0; i < 8; i += 2) {  // pairs of rows: (a0 b0 a1 b1 | a4 b4 a5 b5)
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {  // quads of rows: r[i + c] holds columns c and c + 4
    const auto pd = [](__m256 v) { return _mm256_castps_pd(v); };
    r[i] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  for (int c = 0; c < 4; ++c) {  // low lanes: rows 0-3 and 4-7 of column c; high: column c + 4
    _mm256_storeu_ps(target + c * target_stride, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_storeu_ps(target + (c + 4) * target_stride,
                     _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}
#endif

void transpose_f32(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                   int64_t cols) {
  int64_t r0 = 0;
#if RG_CPU_CAP_LEVEL > 0
  constexpr int64_t L = simd::kLanes;
  for (; r0 + L <= rows; r0 += L)
    for (int64_t c0 = 0; c0 + L <= cols; c0 += L)
      transpose_block(src + r0 * ld_src + c0, ld_src, dst + c0 * ld_dst + r0, ld_dst);
  const int64_t whole_cols = cols / L * L;
  for (int64_t r = 0; r < r0; ++r)  // the columns left of the rows done by blocks
    for (int64_t c = whole_cols; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
#endif
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}

}  // namespace rg::cpu::RG_CPU_CAP
