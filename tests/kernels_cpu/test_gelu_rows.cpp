// GELU (tanh and exact) and its gradient on contiguous f32 tensors, which take gelu_rows.h's
// AVX-512 or AVX2 loops at those capabilities, against the formula in double and against the op
// table's float rows (core/elementwise_scalar.h) that strided tensors still take.
#include <limits>

#include "core/cpu_capability.h"
#include "core/elementwise_scalar.h"
#include "tests/kernels_cpu/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

double gelu_tanh_f64(double x) { return scalar::gelu_tanh(x); }
double gelu_tanh_grad_f64(double x) { return scalar::gelu_tanh_grad(x); }

// n values over [-12, 12] and the edges: +-inf, NaN, +-100, +-0.
Tensor gelu_inputs(int64_t n) {
  Tensor x = empty({n}, DType::f32);
  const float edges[] = {std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(),
                         100.f,
                         -100.f,
                         0.f,
                         -0.f};
  for (int64_t i = 0; i < n; ++i)
    set(x, i, i < 7 ? edges[i] : -12.0 + 24.0 * double(i) / double(n));
  return x;
}

bool same_or_both_nan(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("gelu_tanh rows: forward and gradient of contiguous f32 match the formula") {
  for (int64_t n : {7, 16, 37, 1000, 70001}) {  // tails, one vector, several threads' chunks
    Tensor x = gelu_inputs(n), y = empty({n}, DType::f32);
    Tensor g = empty({n}, DType::f32), dx = empty({n}, DType::f32);
    for (int64_t i = 0; i < n; ++i) set(g, i, 0.5 + double(i % 5));
    cpu().unary(UnaryOp::gelu_tanh, y, x);
    cpu().unary_backward(UnaryOp::gelu_tanh, dx, g, x, y);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xi = get(x, i), gi = get(g, i);
      if (!std::isfinite(xi) || std::fabs(xi) > 50) {  // edges: the float rows' own answer
        bad += !same_or_both_nan(get(y, i), scalar::gelu_tanh(float(xi)));
        bad += !same_or_both_nan(get(dx, i), float(gi) * scalar::gelu_tanh_grad(float(xi)));
        continue;
      }
      const double scale = 1 + std::fabs(xi);
      bad += std::fabs(get(y, i) - gelu_tanh_f64(xi)) > 1e-6 * scale;
      bad += std::fabs(get(dx, i) - gi * gelu_tanh_grad_f64(xi)) > 2e-6 * scale * gi;
    }
    CHECK_MESSAGE(bad == 0, "n = ", n);
  }
}

TEST_CASE("gelu_tanh rows: contiguous and strided f32 agree to 2 ulp") {
  const int64_t n = 4099;
  Tensor x = gelu_inputs(n);
  Tensor wide = empty({n, 2}, DType::f32);  // column 0 as a strided view of x's values
  Tensor x_strided = wide.narrow(1, 0, 1).view({n});
  cpu().copy(wide.narrow(1, 0, 1), x.view({n, 1}));
  Tensor y = empty({n}, DType::f32),
         y_strided = empty({n, 2}, DType::f32).narrow(1, 0, 1).view({n});
  cpu().unary(UnaryOp::gelu_tanh, y, x);
  cpu().unary(UnaryOp::gelu_tanh, y_strided, x_strided);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = get(y, i), b = get(y_strided, i);
    if (!std::isfinite(a) || !std::isfinite(b)) {
      bad += !same_or_both_nan(a, b);
      continue;
    }
    const double ulp =
        std::nextafter(float(std::fabs(b)), std::numeric_limits<float>::infinity()) - std::fabs(b);
    bad += std::fabs(a - b) > 2 * std::max(ulp, double(std::numeric_limits<float>::denorm_min()));
  }
  CHECK(bad == 0);
}

namespace {

// Exact GELU's largest error: its rows' |y - gelu(x)| over 1 + |x|, against double.
struct ErfRowErrors {
  double forward = 0, gradient = 0;
  int64_t edges_differing = 0;  // non-finite or |x| > 50: must equal the float rows exactly
};

ErfRowErrors exact_gelu_row_errors(int64_t n) {
  Tensor x = gelu_inputs(n), y = empty({n}, DType::f32);
  Tensor g = empty({n}, DType::f32), dx = empty({n}, DType::f32);
  for (int64_t i = 0; i < n; ++i) set(g, i, 0.5 + double(i % 5));
  cpu().unary(UnaryOp::gelu, y, x);
  cpu().unary_backward(UnaryOp::gelu, dx, g, x, y);
  ErfRowErrors e;
  for (int64_t i = 0; i < n; ++i) {
    const double xi = get(x, i), gi = get(g, i);
    if (!std::isfinite(xi) || std::fabs(xi) > 50) {
      e.edges_differing += !same_or_both_nan(get(y, i), scalar::gelu_erf(float(xi)));
      e.edges_differing +=
          !same_or_both_nan(get(dx, i), float(gi) * scalar::gelu_erf_grad(float(xi)));
      continue;
    }
    const double scale = 1 + std::fabs(xi);
    e.forward = std::max(e.forward, std::fabs(get(y, i) - scalar::gelu_erf(xi)) / scale);
    e.gradient =
        std::max(e.gradient, std::fabs(get(dx, i) - gi * scalar::gelu_erf_grad(xi)) / (scale * gi));
  }
  return e;
}

}  // namespace

// Over 4M points of [-12, 12] the AVX-512 rows' largest errors were 7.1e-8 (forward) and
// 7.6e-8 (gradient); the table's float rows' (erff, expf) 8.2e-8 and 7.4e-8.
TEST_CASE("exact gelu rows: forward and gradient of contiguous f32 match the formula") {
  for (int64_t n : {7, 16, 37, 1000, 70001}) {  // tails, one vector, several threads' chunks
    const ErfRowErrors e = exact_gelu_row_errors(n);
    CHECK_MESSAGE(e.forward < 1.5e-7, "n = ", n, ": forward error ", e.forward);
    CHECK_MESSAGE(e.gradient < 1.5e-7, "n = ", n, ": gradient error ", e.gradient);
    CHECK_MESSAGE(e.edges_differing == 0, "n = ", n);
  }
}

TEST_CASE("exact gelu rows: small values of x Phi(x) for negative x stay relatively exact") {
  // x Phi(x) at x = -5 is -1.4e-6: the float rows' 1 + erf(x / sqrt 2) keeps about 3 digits of
  // it, the rows' erfc all of them (to the fit's 1e-6 relative here) where the build has them.
  Tensor x = empty({16}, DType::f32), y = empty({16}, DType::f32);
  for (int64_t i = 0; i < 16; ++i) set(x, i, -3.0 - 0.25 * double(i));
  cpu().unary(UnaryOp::gelu, y, x);
  for (int64_t i = 0; i < 16; ++i) {
    const double xi = get(x, i), want = scalar::gelu_erf(xi);
    if (rg::cpu_capability() != rg::CpuCapability::baseline)  // the vector rows
      CHECK_MESSAGE(std::fabs(get(y, i) - want) < 1e-5 * std::fabs(want), "x = ", xi);
    else
      CHECK_MESSAGE(std::fabs(get(y, i) - want) < 2e-7 * std::fabs(xi), "x = ", xi);
  }
}
