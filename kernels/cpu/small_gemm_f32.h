// Small f32 products whose operands all fit in L1: attention's tile products
// (kernels/cpu/attention.cpp), where Eigen spent as long packing both operands of each
// 64 x 64 x 64 product as multiplying them (docs/performance.md, change 13).
#pragma once
#include <cstdint>

#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

// True when this capability has the tuned kernel (AVX-512, AVX2) and n suits it (a multiple
// of the vector's lanes):
// callers then prefer small_gemm_f32 to Eigen. The portable loop runs (and is tested) anyway.
bool small_gemm_f32_fits(int64_t n);

// c [m,n] = alpha * op(a) [m,k] @ b [k,n], plus c's previous contents when `accumulate`.
// op(a)'s element (i, p) is a[i * a_row + p * a_col] (a row-major slice: a_col = 1; its
// transpose: a_row = 1); b is row-major with row stride ldb, c with row stride ldc. Each
// element is the products summed in order of p in f32, then times alpha, then added to c.
void small_gemm_f32(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col,
                    const float* b, int64_t ldb, int64_t m, int64_t k, int64_t n, float alpha,
                    bool accumulate);

}  // namespace rg::cpu::RG_CPU_CAP
