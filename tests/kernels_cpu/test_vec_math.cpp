// core/vec_math.h: the vectorisable float exp and tanh against double libm, over a sample
// of every float (sign, exponent and mantissa bits alike) and the special values; the cpu row
// kernels' exp (kernels/cpu/row_math.h) against exp_f32, bit for bit.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/vec_math.h"
#include "kernels/cpu/row_math.h"

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

// The row kernels' exp (kernels/cpu/row_math.h: exp16 with AVX-512, else exp_f32 vectorised by
// the compiler) gives exp_f32's bits for every input, in whole vectors and in every tail.
TEST_CASE(
    "row_math: exp_shift, exp_sum and scaled_exp give exp_f32's bits over a sample of all floats") {
  std::vector<float> x, y, z, w;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 509)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  y.resize(x.size());
  z.resize(x.size());
  w.resize(x.size());
  rg::cpu::RG_CPU_CAP::row::exp_shift(y.data(), x.data(), int64_t(x.size()), 0.0f);
  rg::cpu::RG_CPU_CAP::row::exp_sum(z.data(), x.data(), int64_t(x.size()), 0.0f);
  rg::cpu::RG_CPU_CAP::row::scaled_exp(w.data(), x.data(), int64_t(x.size()), 0.0f, 0.0f, 1.0f);
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = rg::vec::exp_f32(x[i]);
    const auto same = [&](float got) {
      return std::isnan(want) ? std::isnan(got)
                              : std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
    };
    differ += !same(y[i]) + !same(z[i]) + !same(w[i]);
  }
  CHECK(differ == 0);
}

TEST_CASE("row_math: exp_sum's sum, exp_sum's and scaled_exp's stores in every tail length") {
  for (int64_t n = 0; n <= 140; ++n) {  // tails, and blocks of 4 vectors summed in float
    std::vector<float> x(n), y(n + 1, -7.0f);
    for (int64_t i = 0; i < n; ++i) x[i] = 0.37f * float(i) - 5.0f;
    double want = 0;
    for (int64_t i = 0; i < n; ++i) want += double(rg::vec::exp_f32(x[i] - 1.5f));
    const double got = rg::cpu::RG_CPU_CAP::row::exp_sum(y.data(), x.data(), n, 1.5f);
    CHECK(got == doctest::Approx(want).epsilon(2.4e-7));  // 2^-22
    CHECK(y[n] == -7.0f);                                 // nothing written past the row
    for (int64_t i = 0; i < n; ++i) CHECK(y[i] == rg::vec::exp_f32(x[i] - 1.5f));
    rg::cpu::RG_CPU_CAP::row::scaled_exp(y.data(), x.data(), n, 1.5f, 0.25f, -0.5f);
    CHECK(y[n] == -7.0f);
    for (int64_t i = 0; i < n; ++i) CHECK(y[i] == rg::vec::exp_f32((x[i] - 1.5f) - 0.25f) * -0.5f);
    CHECK(rg::cpu::RG_CPU_CAP::row::exp_sum(nullptr, x.data(), n, 1.5f) ==
          doctest::Approx(want).epsilon(2.4e-7));
    // prefetching a next row changes nothing: the same sum and stores, bit for bit
    std::vector<float> next(n, 3.0f), z(n + 1, -7.0f);
    CHECK(rg::cpu::RG_CPU_CAP::row::exp_sum(z.data(), x.data(), n, 1.5f, next.data()) == got);
    CHECK(z[n] == -7.0f);
    for (int64_t i = 0; i < n; ++i) CHECK(z[i] == rg::vec::exp_f32(x[i] - 1.5f));
    CHECK(next == std::vector<float>(n, 3.0f));
  }
}

TEST_CASE("row_math: max over every tail length, NaN entries skipped") {
  for (int64_t n = 0; n <= 140; ++n) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = float((i * 37) % 101) - 50.0f;
    if (n > 3) x[n / 2] = std::nanf("");
    float want = -std::numeric_limits<float>::infinity();
    for (float v : x) want = v > want ? v : want;
    CHECK(rg::cpu::RG_CPU_CAP::row::max(x.data(), n) == want);
  }
}
