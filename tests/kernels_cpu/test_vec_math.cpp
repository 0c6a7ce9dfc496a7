// core/vec_math.h: the vectorisable float exp and tanh against double libm, over a sample
// of every float (sign, exponent and mantissa bits alike) and the special values.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/vec_math.h"

namespace {

// |got - want| in units of the float spacing at want (subnormal spacing below the normals).
double ulp_error(float got, double want) {
  float w = static_cast<float>(want);
  if (std::isinf(w)) return got == w ? 0 : 1e9;
  double spacing = std::fabs(double(std::nextafter(w, std::numeric_limits<float>::infinity())) - w);
  if (std::fabs(w) < std::numeric_limits<float>::min() || spacing == 0)
    spacing = std::numeric_limits<float>::denorm_min();
  return std::fabs(double(got) - want) / spacing;
}

template <typename F, typename G>
double max_ulp_error(F vec_fn, G reference) {
  double worst = 0;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 509) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(x)) continue;
    worst = std::max(worst, ulp_error(vec_fn(x), reference(double(x))));
  }
  return worst;
}

}  // namespace

TEST_CASE("vec_math: exp_f32 within 1 ulp of exp over a sample of all floats") {
  double err = max_ulp_error(rg::vec::exp_f32, [](double x) { return std::exp(x); });
  MESSAGE("exp_f32 max error ", err, " ulp");
  CHECK(err <= 1.0);
}

TEST_CASE("vec_math: tanh_f32 within 2 ulp of tanh over a sample of all floats") {
  double err = max_ulp_error(rg::vec::tanh_f32, [](double x) { return std::tanh(x); });
  MESSAGE("tanh_f32 max error ", err, " ulp");
  CHECK(err <= 2.0);
}

TEST_CASE("vec_math: special values") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(std::isnan(rg::vec::exp_f32(std::nanf(""))));
  CHECK(std::isnan(rg::vec::tanh_f32(std::nanf(""))));
  CHECK(rg::vec::exp_f32(inf) == inf);
  CHECK(rg::vec::exp_f32(100.0f) == inf);  // overflow
  CHECK(rg::vec::exp_f32(-inf) == 0.0f);
  CHECK(rg::vec::exp_f32(-200.0f) == 0.0f);  // underflow
  CHECK(rg::vec::exp_f32(0.0f) == 1.0f);
  CHECK(rg::vec::exp_f32(-100.0f) > 0.0f);  // subnormal result, not flushed
  CHECK(rg::vec::tanh_f32(inf) == 1.0f);
  CHECK(rg::vec::tanh_f32(-inf) == -1.0f);
  CHECK(rg::vec::tanh_f32(0.0f) == 0.0f);
  CHECK(std::signbit(rg::vec::tanh_f32(-0.0f)));
}
