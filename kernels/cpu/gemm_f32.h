// ringgrad's own single-threaded f32 GEMM for the CPU (gemm_f32.cpp): the products of linear's
// forward and of its input gradient, where it beats Eigen's (docs/performance.md, change 10).
#pragma once
#include <cstdint>

#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

// True when this build has the tuned micro-kernel (AVX-512), where gemm_f32 beats Eigen and
// the GEMM tasks use it; false where the portable loop of the same algorithm runs (the tests
// still call it directly; the matmul kernel keeps Eigen).
bool gemm_f32_tuned();

// c [m,n] (row stride ldc) = a [m,k] @ b [k,n], plus c's previous contents when `accumulate`,
// else plus `bias` (n floats, every row; linear's epilogue without a pass of its own) if given.
// a is row-major with row stride lda; b's element (p, j) is b[p * b_row + j * b_col], so b may
// be a transposed view (linear's weight^T: b_row = 1, b_col = K). Each element's products are
// summed in order of p, in f32, so the result does not depend on how the caller splits rows.
void gemm_f32(float* c, int64_t ldc, const float* a, int64_t lda, const float* b, int64_t b_row,
              int64_t b_col, int64_t m, int64_t k, int64_t n, bool accumulate,
              const float* bias = nullptr);

}  // namespace rg::cpu::RG_CPU_CAP
