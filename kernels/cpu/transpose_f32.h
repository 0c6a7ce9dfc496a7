// Transposes of f32 blocks for the CPU kernels: gemm_f32's packing of a transposed b, and
// attention's k^T and v^T (transpose_f32.cpp).
#pragma once
#include <cstdint>

namespace rg::cpu {

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols: by 16 x 16 blocks in
// registers where the build has AVX-512, the rest one element at a time.
void transpose_f32(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                   int64_t cols);

#if defined(__AVX512F__)
// The 16 x 16 block at `source` (rows source_stride apart) transposed into `target` (rows
// target_stride apart).
void transpose_16x16(const float* source, int64_t source_stride, float* target,
                     int64_t target_stride);
#endif

}  // namespace rg::cpu
