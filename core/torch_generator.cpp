// PyTorch's CPU distributions over MT19937: see core/torch_generator.h for each algorithm.
#include "core/torch_generator.h"

#include <cmath>
#include <numeric>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace rg {

namespace {
constexpr double kPi = 3.14159265358979323846;

// PyTorch's Box-Muller on 16 uniforms in place: u[j] and u[j + 8] become two normals.
template <typename T>
void box_muller_16(T* data, T mean, T std) {
  for (int j = 0; j < 8; ++j) {
    const T u1 = 1 - data[j];  // [0, 1) -> (0, 1] for the log
    const T u2 = data[j + 8];
    const T radius = std::sqrt(-2 * std::log(u1));
    const T theta = static_cast<T>(2.0 * kPi * u2);
    data[j] = std::fma(radius * std::cos(theta), std, mean);
    data[j + 8] = std::fma(radius * std::sin(theta), std, mean);
  }
}
// x = fma(x, width, low): one rounding, as PyTorch's kernels (built with FMA contraction) give.
// The same bits either way; the FMA instruction, where the CPU has it, is only faster than the
// library's exact software fma.
template <typename T>
void scale_and_shift_portable(T* x, int64_t n, T width, T low) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::fma(x[i], width, low);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
template <typename T>
__attribute__((target("fma"))) void scale_and_shift_fma(T* x, int64_t n, T width, T low) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::fma(x[i], width, low);
}

template <typename T>
void scale_and_shift(T* x, int64_t n, T width, T low) {
  static const bool has_fma = __builtin_cpu_supports("fma");
  if (has_fma)
    scale_and_shift_fma(x, n, width, low);
  else
    scale_and_shift_portable(x, n, width, low);
}
#else
template <typename T>
void scale_and_shift(T* x, int64_t n, T width, T low) {
  scale_and_shift_portable(x, n, width, low);
}
#endif

}  // namespace

void TorchGenerator::manual_seed(uint64_t seed) {
  seed_ = seed;
  engine_.seed_with(static_cast<uint32_t>(seed));
  has_next_normal_ = false;
}

uint64_t TorchGenerator::random64() {
  uint64_t high = engine_();
  uint64_t low = engine_();
  return (high << 32) | low;
}

double TorchGenerator::uniform_double() {
  return static_cast<double>(random64() & ((1ull << 53) - 1)) * 0x1p-53;
}

float TorchGenerator::uniform_float() {
  return static_cast<float>(random() & ((1u << 24) - 1)) * 0x1p-24f;
}

double TorchGenerator::normal_double() {
  if (has_next_normal_) {
    has_next_normal_ = false;
    return next_normal_;
  }
  const double u1 = uniform_double();
  const double u2 = uniform_double();
  const double radius = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * kPi * u1;
  next_normal_ = radius * std::sin(theta);
  has_next_normal_ = true;
  return radius * std::cos(theta);
}

template <typename T>
void TorchGenerator::uniform(T* out, int64_t n, double from, double to) {
  const T low = static_cast<T>(from);
  const T width = static_cast<T>(to) - low;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, double>)
      out[i] = uniform_double();
    else
      out[i] = uniform_float();
  }
  if (low != 0 || width != 1) scale_and_shift(out, n, width, low);
}

template <typename T>
void TorchGenerator::normal(T* out, int64_t n, double mean, double std, bool contiguous) {
  RG_CHECK(std >= 0, "normal: expected std >= 0.0, got ", std);
  if (n < 16 || !contiguous) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(std::fma(normal_double(), std, mean));
    return;
  }
  uniform(out, n, 0.0, 1.0);
  for (int64_t i = 0; i + 16 <= n; i += 16)
    box_muller_16<T>(out + i, static_cast<T>(mean), static_cast<T>(std));
  if (n % 16 != 0) {  // the last 16 again, from fresh uniforms
    uniform(out + n - 16, 16, 0.0, 1.0);
    box_muller_16<T>(out + n - 16, static_cast<T>(mean), static_cast<T>(std));
  }
}

template <typename T>
void TorchGenerator::exponential(T* out, int64_t n, double lambda) {
  RG_CHECK(lambda > 0 && std::isfinite(lambda), "exponential_: expected lambda > 0, got ", lambda);
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(-1.0 / lambda * std::log1p(-uniform_double()));
}

template <typename T>
void TorchGenerator::bernoulli(T* out, int64_t n, double p) {
  RG_CHECK(p >= 0 && p <= 1, "bernoulli_: expected 0 <= p <= 1, got ", p);
  for (int64_t i = 0; i < n; ++i) out[i] = uniform_double() < p ? T(1) : T(0);
}

template <typename T>
void TorchGenerator::bernoulli(T* out, const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    RG_CHECK(p[i] >= 0 && p[i] <= 1, "bernoulli: expected 0 <= p <= 1, got ", p[i]);
    T u = std::is_same_v<T, double> ? static_cast<T>(uniform_double()) : uniform_float();
    out[i] = u < p[i] ? T(1) : T(0);
  }
}

void TorchGenerator::integers(int64_t* out, int64_t n, uint64_t modulus, int64_t base, bool wide) {
  RG_CHECK(modulus > 0, "random_: expected from < to");
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = wide ? random64() : random();
    out[i] = static_cast<int64_t>(bits % modulus + static_cast<uint64_t>(base));
  }
}

void TorchGenerator::randperm(int64_t* out, int64_t n) {
  RG_CHECK(n >= 0, "randperm: expected n >= 0, got ", n);
  if (n < static_cast<int64_t>(UINT32_MAX / 20)) {
    std::iota(out, out + n, int64_t{0});
    for (int64_t i = 0; i + 1 < n; ++i) {
      int64_t z = static_cast<int64_t>(random() % static_cast<uint64_t>(n - i));
      std::swap(out[i], out[i + z]);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {  // inside-out: no initialization pass
    int64_t z = static_cast<int64_t>(random64() % static_cast<uint64_t>(i + 1));
    out[i] = out[z];
    out[z] = i;
  }
}

template void TorchGenerator::uniform(float*, int64_t, double, double);
template void TorchGenerator::uniform(double*, int64_t, double, double);
template void TorchGenerator::normal(float*, int64_t, double, double, bool);
template void TorchGenerator::normal(double*, int64_t, double, double, bool);
template void TorchGenerator::exponential(float*, int64_t, double);
template void TorchGenerator::exponential(double*, int64_t, double);
template void TorchGenerator::bernoulli(float*, int64_t, double);
template void TorchGenerator::bernoulli(double*, int64_t, double);
template void TorchGenerator::bernoulli(float*, const float*, int64_t);
template void TorchGenerator::bernoulli(double*, const double*, int64_t);

}  // namespace rg
