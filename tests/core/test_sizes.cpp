// Sizes are counted with overflow checks wherever a tensor is made or viewed (core/shape.h's
// checked_numel and checked_nbytes): a shape whose elements or bytes do not fit an int64, a
// negative size, or a bound that is not a finite number is one rg::Error naming the op and the
// sizes, before any memory is touched.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/shape_checks.h"
#include "ringgrad.h"

using namespace rg;

namespace {

constexpr int64_t k2to32 = int64_t(1) << 32;
constexpr int64_t k2to33 = int64_t(1) << 33;

TEST_CASE("checked_numel and checked_nbytes count what fits and name what does not") {
  CHECK(checked_numel({2, 3, 4}, "t") == 24);
  CHECK(checked_numel({}, "t") == 1);
  CHECK(checked_numel({0, k2to32}, "t") == 0);
  CHECK(checked_nbytes({3, 5}, 8, "t") == 120);
  CHECK_THROWS_WITH_AS(checked_numel({2, -3}, "op"), "op: invalid size -3 in shape [2,-3]", Error);
  CHECK_THROWS_WITH_AS(checked_numel({k2to32, k2to32}, "op"),
                       doctest::Contains("op: shape [4294967296,4294967296] has too many elements"),
                       Error);
  // The zero does not hide an overflow of the other sizes (the strides would overflow).
  CHECK_THROWS_WITH_AS(checked_numel({0, k2to32, k2to32}, "op"),
                       doctest::Contains("has too many elements"), Error);
  CHECK_THROWS_WITH_AS(checked_nbytes({int64_t(1) << 61}, 8, "op"),
                       "op: shape [2305843009213693952] of 8-byte elements is more than 2^63-1 "
                       "bytes",
                       Error);
}

TEST_CASE("factories refuse shapes whose element or byte count overflows, naming the op") {
  CHECK_THROWS_WITH_AS(zeros({k2to33, k2to33}),
                       doctest::Contains("zeros: shape [8589934592,8589934592] has too many"),
                       Error);
  CHECK_THROWS_WITH_AS(ones({k2to32, k2to32, 2}), doctest::Contains("ones: shape"), Error);
  CHECK_THROWS_WITH_AS(full({k2to32, k2to32}, 2.0), doctest::Contains("full: shape"), Error);
  CHECK_THROWS_WITH_AS(empty({k2to32, k2to32}), doctest::Contains("empty: shape"), Error);
  CHECK_THROWS_WITH_AS(randn({int64_t(1) << 31, int64_t(1) << 31}),
                       doctest::Contains("randn: shape [2147483648,2147483648] of 4-byte "
                                         "elements is more than 2^63-1 bytes"),
                       Error);
  CHECK_THROWS_WITH_AS(rand({k2to33, k2to33}), doctest::Contains("rand: shape"), Error);
  CHECK_THROWS_WITH_AS(zeros({3, -1}), "zeros: invalid size -1 in shape [3,-1]", Error);
}

TEST_CASE("arange refuses bounds that are not finite and counts that do not fit") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(arange(0, nan, 1),
                       "arange: start, end and step must be finite, got start=0, end=nan, step=1",
                       Error);
  CHECK_THROWS_WITH_AS(arange(0, inf, 1), doctest::Contains("must be finite"), Error);
  CHECK_THROWS_WITH_AS(arange(0, 1, nan), doctest::Contains("must be finite"), Error);
  CHECK_THROWS_WITH_AS(arange(0, 1e30, 1),
                       doctest::Contains("arange: [0, 1e+30) in steps of 1 has too many elements"),
                       Error);
  CHECK_THROWS_WITH_AS(arange(0, 1, 0), doctest::Contains("arange: step must be non-zero"), Error);
  CHECK(arange(0, 5, 2).to_vector<float>() == std::vector<float>{0, 2, 4});
  CHECK(arange(3, 0, -1).to_vector<float>() == std::vector<float>{3, 2, 1});
  CHECK(arange(5, 0, 1).numel() == 0);
}

TEST_CASE("expand and view refuse negative and overflowing sizes") {
  Tensor row = ones({1, 3});
  CHECK_THROWS_WITH_AS(expand(row, {-5, 3}), doctest::Contains("expand: invalid size -5"), Error);
  CHECK_THROWS_WITH_AS(expand(row, {2, -2}), doctest::Contains("expand: invalid size -2"), Error);
  CHECK_THROWS_WITH_AS(expand(ones({1, 1, 3}), {k2to32, k2to32, 3}),
                       doctest::Contains("expand: shape [4294967296,4294967296,3] has too many"),
                       Error);
  CHECK(expand(row, {2, -1}).shape() == Shape{2, 3});
  CHECK(sum(expand(row, {4, 3})).item() == 12.0);
  CHECK_THROWS_WITH_AS(view(ones({0}), {0, k2to32, k2to32}),
                       doctest::Contains("view: shape [0,4294967296,4294967296] has too many"),
                       Error);
  CHECK_THROWS_WITH_AS(
      reshape(ones({0}), {k2to32, k2to32, 0, -1}),
      doctest::Contains("reshape: shape [4294967296,4294967296,0,-1] has too many"), Error);
}

TEST_CASE("broadcasting to a shape that cannot be counted names the op") {
  Tensor tall = expand(ones({1, 1}), {k2to32, 1});
  Tensor wide = expand(ones({1, 1}), {1, k2to32});
  CHECK_THROWS_WITH_AS(add(tall, wide),
                       doctest::Contains("add: shape [4294967296,4294967296] has too many"), Error);
}

}  // namespace
