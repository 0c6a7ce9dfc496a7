// gemm_f32 (ringgrad's own f32 GEMM): every element equals the chain of f32 products over p
// in order, started from c's old value or 0 (one FMA per product where the build has the
// tuned kernel, a multiply and an add in the portable loop), bit for bit, at every edge of
// its blocking: rows 1-6 of a register tile, partial panels, more than one packed block of
// rows (k > 256) and of columns (n > 1024), b read by rows or as a transposed view, row
// strides wider than the rows, accumulation, k = 0; and the result does not depend on how the
// rows are split between calls (the matmul kernel's tasks).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/gemm_f32.h"
#include "tests/kernels_cpu/gemm_check.h"

namespace {

struct Case {
  int64_t m, k, n;
  bool b_transposed, accumulate, bias = false;  // bias: only without accumulate
};

// The expected chain for element (i, j): start, then + a(i,p) * b(p,j) for p = 0 .. k-1.
float chain(float start, const float* a_row, const std::vector<float>& b, int64_t b_row,
            int64_t b_col, int64_t k, int64_t j) {
  float s = start;
  for (int64_t p = 0; p < k; ++p) {
    const float product_b = b[p * b_row + j * b_col];
    if (rg::cpu::RG_CPU_CAP::gemm_f32_tuned())
      s = std::fma(a_row[p], product_b, s);
    else
      s = s + a_row[p] * product_b;
  }
  return s;
}

void check_case(const Case& cs, std::mt19937& rng) {
  const int64_t lda = cs.k + 3, ldc = cs.n + 5;  // row strides wider than the rows
  const int64_t b_row = cs.b_transposed ? 1 : cs.n + 2, b_col = cs.b_transposed ? cs.k + 1 : 1;
  const std::vector<float> a = rg::test::random_floats(cs.m * lda, rng);
  const std::vector<float> b =
      rg::test::random_floats(cs.b_transposed ? cs.n * b_col : cs.k * b_row, rng);
  const std::vector<float> c0 = rg::test::random_floats(cs.m * ldc, rng);
  const std::vector<float> bias = rg::test::random_floats(cs.n, rng);
  const float* bias_or_null = cs.bias ? bias.data() : nullptr;
  std::vector<float> c = c0;
  rg::cpu::RG_CPU_CAP::gemm_f32(c.data(), ldc, a.data(), lda, b.data(), b_row, b_col, cs.m, cs.k,
                                cs.n, cs.accumulate, bias_or_null);
  const std::string what = "m " + std::to_string(cs.m) + " k " + std::to_string(cs.k) + " n " +
                           std::to_string(cs.n) + (cs.b_transposed ? " b^T" : " b") +
                           (cs.accumulate ? " accumulate" : "") + (cs.bias ? " bias" : "");
  INFO(what);
  rg::test::check_product(c, c0, cs.m, cs.n, ldc, [&](int64_t i, int64_t j, float got) {
    const float start = cs.accumulate ? c0[i * ldc + j] : cs.bias ? bias[j] : 0.f;
    return got == chain(start, &a[i * lda], b, b_row, b_col, cs.k, j);
  });

  // The same product in two calls, rows [0, split) and [split, m): the same bits.
  const int64_t split = cs.m / 2 + 1;
  if (split >= cs.m) return;
  std::vector<float> halves = c0;
  rg::cpu::RG_CPU_CAP::gemm_f32(halves.data(), ldc, a.data(), lda, b.data(), b_row, b_col, split,
                                cs.k, cs.n, cs.accumulate, bias_or_null);
  rg::cpu::RG_CPU_CAP::gemm_f32(halves.data() + split * ldc, ldc, a.data() + split * lda, lda,
                                b.data(), b_row, b_col, cs.m - split, cs.k, cs.n, cs.accumulate,
                                bias_or_null);
  CHECK(halves == c);
}

TEST_CASE("gemm_f32 equals the ordered f32 chain at every blocking edge") {
  std::mt19937 rng(5);
  const Case cases[] = {
      {1, 1, 1, false, false},        {6, 16, 64, false, false},
      {7, 33, 65, true, false},       {13, 64, 128, true, true},
      {5, 300, 70, false, true},      {12, 257, 130, true, false},
      {2, 5, 1100, false, false},     {9, 520, 1030, true, true},
      {4, 3, 17, false, true},        {31, 128, 384, true, false},
      {64, 128, 128, false, false},   {3, 600, 64, true, true},
      {7, 40, 70, true, false, true}, {13, 300, 1090, true, false, true},
      {2, 3, 9, false, false, true},
  };
  for (const Case& cs : cases) check_case(cs, rng);
}

TEST_CASE("gemm_f32 with k = 0 leaves c (accumulate), or sets its m x n block to 0 or the bias") {
  std::vector<float> c(4 * 9, 7.f);
  rg::cpu::RG_CPU_CAP::gemm_f32(c.data(), 9, nullptr, 0, nullptr, 8, 1, 4, 0, 8, true);
  CHECK(c == std::vector<float>(4 * 9, 7.f));
  rg::cpu::RG_CPU_CAP::gemm_f32(c.data(), 9, nullptr, 0, nullptr, 8, 1, 4, 0, 8, false);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 9; ++j) CHECK(c[i * 9 + j] == (j < 8 ? 0.f : 7.f));
  const std::vector<float> bias = {1, 2, 3, 4, 5, 6, 7, 8};
  rg::cpu::RG_CPU_CAP::gemm_f32(c.data(), 9, nullptr, 0, nullptr, 8, 1, 4, 0, 8, false,
                                bias.data());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 9; ++j) CHECK(c[i * 9 + j] == (j < 8 ? bias[j] : 7.f));
}

}  // namespace
