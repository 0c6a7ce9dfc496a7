// <immintrin.h> for the CPU kernels' AVX-512 code (gemm_f32, small_gemm_f32, transpose_f32,
// row_math, linear_weight_grad), on AVX-512 builds only. GCC 12 warns inside its own
// intrinsics (`__m512 __Y = __Y;`) at the header's lines, so the warnings are silenced where
// the header is read (first: a file that also includes Eigen includes this before it).
#pragma once
#if defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
