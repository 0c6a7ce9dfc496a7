// The strided elementwise path's 32-bit index math (kernels/cuda/fast_divider.cuh and
// OffsetCalc32 in elementwise.cuh) against plain 64-bit division: every divisor up to 4096
// and the powers of two and their neighbours, at the edges of the 32-bit range; and the
// 32-bit offset map against the 64-bit one at every index of assorted shapes and strides.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "kernels/cuda/elementwise.cuh"

using rg::sim::FastDivider;

namespace {

void check_divisor(uint32_t d, const std::vector<uint32_t>& numerators) {
  FastDivider div(d);
  for (uint32_t n : numerators) {
    uint32_t rem = 0;
    uint32_t q = div.divmod(n, &rem);
    if (q != n / d || rem != n % d) FAIL_CHECK(n, " / ", d, " gave ", q, " rem ", rem);
  }
}

std::vector<uint32_t> numerators_for(uint32_t d, std::mt19937& gen) {
  std::vector<uint32_t> out = {0, 1, d - 1, d, d + 1, 0x7fffffffu, 0x80000000u, 0xffffffffu};
  for (uint64_t k : {2, 3, 1000, 65535}) {  // multiples of d and their neighbours
    uint64_t m = uint64_t(d) * k;
    if (m > 0xffffffffull) continue;
    out.push_back(uint32_t(m - 1));
    out.push_back(uint32_t(m));
  }
  for (int i = 0; i < 200; ++i) out.push_back(gen());
  return out;
}

}  // namespace

TEST_CASE("fast divider: quotient and remainder equal integer division") {
  std::mt19937 gen(5);
  for (uint32_t d = 1; d <= 4096; ++d) check_divisor(d, numerators_for(d, gen));
  for (int bit = 1; bit < 32; ++bit)
    for (int64_t delta : {-1, 0, 1}) {
      uint32_t d = uint32_t((int64_t(1) << bit) + delta);
      check_divisor(d, numerators_for(d, gen));
    }
  for (uint32_t d : {0x7fffffffu, 0x80000001u, 0xfffffffeu, 0xffffffffu, 3000000019u})
    check_divisor(d, numerators_for(d, gen));
}

TEST_CASE("offset calc: the 32-bit map equals the 64-bit map at every index") {
  using rg::sim::OffsetCalc;
  std::mt19937 gen(11);
  for (int trial = 0; trial < 200; ++trial) {
    OffsetCalc<3> calc;
    calc.ndim = 1 + int(gen() % rg::sim::kMaxDims);
    int64_t n = 1;
    for (int d = 0; d < calc.ndim; ++d) {
      calc.sizes[d] = 1 + gen() % 4;  // at most 4^8 elements
      n *= calc.sizes[d];
      for (int k = 0; k < 3; ++k) calc.strides[d][k] = gen() % 4 == 0 ? 0 : gen() % 100000;
    }
    REQUIRE(rg::sim::fits_32bit(calc, n));
    auto calc32 = rg::sim::narrow_to_32bit(calc);
    for (int64_t i = 0; i < n; ++i) {
      int64_t want[3];
      uint32_t got[3];
      calc.offsets(i, want);
      calc32.offsets(uint32_t(i), got);
      for (int k = 0; k < 3; ++k)
        if (int64_t(got[k]) != want[k]) FAIL_CHECK("index ", i, " operand ", k);
    }
  }
}

TEST_CASE("offset calc: 32-bit only when every offset fits below 2^31") {
  rg::sim::OffsetCalc<2> calc;
  calc.ndim = 2;
  calc.sizes[0] = 2;
  calc.sizes[1] = 3;
  calc.strides[0][0] = 3, calc.strides[1][0] = 1;
  calc.strides[0][1] = (int64_t(1) << 31) - 3, calc.strides[1][1] = 1;  // last offset 2^31 - 1
  CHECK(rg::sim::fits_32bit(calc, 6));
  calc.strides[0][1] += 1;  // last offset 2^31
  CHECK_FALSE(rg::sim::fits_32bit(calc, 6));
  calc.strides[0][1] = 1;
  CHECK_FALSE(rg::sim::fits_32bit(calc, int64_t(1) << 31));  // too many elements
}
