// small_gemm_f32 (attention's tile products): c (+)= alpha * op(a) @ b against a double
// reference, for a row-major a and its transpose, with and without accumulation, at every edge
// of its tiling (rows 1-6 of a register tile and more, 1-4 vectors of columns and more than
// one block of 64, columns that are not whole vectors, k = 1 and long k); the elements of c
// outside the m x n product keep their values. small_gemm_f32_fits says which widths the
// tuned kernel takes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/small_gemm_f32.h"
#include "tests/kernels_cpu/gemm_check.h"

namespace {

struct Case {
  int64_t m, k, n;
  bool a_transposed, accumulate;
};

void check_case(const Case& cs, std::mt19937& rng) {
  const float alpha = 0.75f;
  const int64_t lda = (cs.a_transposed ? cs.m : cs.k) + 3, ldb = cs.n + 2, ldc = cs.n + 5;
  const int64_t a_row = cs.a_transposed ? 1 : lda, a_col = cs.a_transposed ? lda : 1;
  const std::vector<float> a = rg::test::random_floats((cs.a_transposed ? cs.k : cs.m) * lda, rng);
  const std::vector<float> b = rg::test::random_floats(cs.k * ldb, rng);
  const std::vector<float> c0 = rg::test::random_floats(cs.m * ldc, rng);
  std::vector<float> c = c0;
  rg::cpu::RG_CPU_CAP::small_gemm_f32(c.data(), ldc, a.data(), a_row, a_col, b.data(), ldb, cs.m,
                                      cs.k, cs.n, alpha, cs.accumulate);
  const std::string what = "m " + std::to_string(cs.m) + " k " + std::to_string(cs.k) + " n " +
                           std::to_string(cs.n) + (cs.a_transposed ? " a^T" : " a") +
                           (cs.accumulate ? " accumulate" : "");
  CAPTURE(what);
  rg::test::check_product(c, c0, cs.m, cs.n, ldc, [&](int64_t i, int64_t j, float got) {
    double want = 0, magnitude = 0;
    for (int64_t p = 0; p < cs.k; ++p) {
      const double product = double(a[i * a_row + p * a_col]) * double(b[p * ldb + j]);
      want += product, magnitude += std::fabs(product);
    }
    want *= alpha;
    if (cs.accumulate) want += c0[i * ldc + j];
    return std::fabs(got - want) <= 1e-6 * (magnitude + 1) * (cs.k + 1);
  });
}

}  // namespace

TEST_CASE("small_gemm_f32 matches a double reference at every tiling edge") {
  std::mt19937 rng(11);
  for (int64_t m : {1, 5, 6, 7, 13, 64})
    for (int64_t k : {1, 32, 65})
      for (int64_t n : {3, 16, 20, 48, 64, 80, 128})
        for (bool a_transposed : {false, true})
          for (bool accumulate : {false, true})
            check_case({m, k, n, a_transposed, accumulate}, rng);
}

TEST_CASE("small_gemm_f32_fits takes whole vectors only") {
  CHECK_FALSE(rg::cpu::RG_CPU_CAP::small_gemm_f32_fits(0));
  CHECK_FALSE(rg::cpu::RG_CPU_CAP::small_gemm_f32_fits(20));
  // 16 and 64 suit the tuned kernel; without one (a portable build) nothing does.
  CHECK(rg::cpu::RG_CPU_CAP::small_gemm_f32_fits(64) ==
        rg::cpu::RG_CPU_CAP::small_gemm_f32_fits(16));
#if RG_CPU_CAP_LEVEL > 0
  CHECK(rg::cpu::RG_CPU_CAP::small_gemm_f32_fits(64));
#else
  CHECK_FALSE(rg::cpu::RG_CPU_CAP::small_gemm_f32_fits(64));
#endif
}
