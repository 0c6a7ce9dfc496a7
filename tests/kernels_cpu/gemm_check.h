// Shared by the tests of the f32 GEMMs (test_gemm_f32.cpp, test_small_gemm_f32.cpp): random
// operands, and the check of an m x n product written into c, whose rows (ldc apart) are wider
// than n: every element in the product must match, every one past column n keep c0's value.
#pragma once
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rg::test {

inline std::vector<float> random_floats(size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(count);
  for (auto& x : v) x = u(rng);
  return v;
}

// matches(i, j, got): whether element (i, j) of the product is right.
template <typename Matches>
void check_product(const std::vector<float>& c, const std::vector<float>& c0, int64_t m, int64_t n,
                   int64_t ldc, Matches&& matches) {
  int64_t wrong = 0, outside_touched = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n)
        outside_touched += got != c0[i * ldc + j];
      else
        wrong += !matches(i, j, got);
    }
  CHECK(wrong == 0);
  CHECK(outside_touched == 0);
}

}  // namespace rg::test
