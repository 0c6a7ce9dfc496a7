// Transposes of f32 blocks for the CPU kernels: gemm_f32's packing of a transposed b, and
// attention's k^T and v^T (transpose_f32.cpp).
#pragma once
#include <cstdint>

#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols: by blocks of a vector's
// lanes squared (16 x 16 with AVX-512, 8 x 8 with AVX2) in registers, the rest one element
// at a time.
void transpose_f32(float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                   int64_t cols);

#if RG_CPU_CAP_LEVEL > 0
// The L x L block at `source` (rows source_stride apart) transposed into `target` (rows
// target_stride apart), L = simd::kLanes.
void transpose_block(const float* source, int64_t source_stride, float* target,
                     int64_t target_stride);
#endif

}  // namespace rg::cpu::RG_CPU_CAP
