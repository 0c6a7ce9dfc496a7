// Shared helpers of the CPU kernel tests: random tensors, strided views, reading any
// tensor as f64 in row-major order, and tolerances per dtype. Kernels are called directly
// through kernel_table(DeviceType::cpu); nothing here depends on ops/.
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/builtin.h"
#include "tests/error_of.h"

namespace rg::test {

inline KernelTable& cpu() { return kernel_table(DeviceType::cpu); }

// Offset in elements of row-major element i of t.
inline int64_t element_offset(const Tensor& t, int64_t i) {
  int64_t at = t.offset();
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    at += (i % t.size(d)) * t.stride(d);
    i /= t.size(d);
  }
  return at;
}

inline double get(const Tensor& t, int64_t i) {
  char* base = static_cast<char*>(t.storage()->data);
  int64_t at = element_offset(t, i);
  return dispatch_dtype<DTypes::all>(t.dtype(), "get", [&]<typename T>(TypeTag<T>) -> double {
    if constexpr (std::is_same_v<T, bf16_t>)
      return double(float(reinterpret_cast<T*>(base)[at]));
    else
      return double(reinterpret_cast<T*>(base)[at]);
  });
}

inline void set(const Tensor& t, int64_t i, double v) {
  char* base = static_cast<char*>(t.storage()->data);
  int64_t at = element_offset(t, i);
  dispatch_dtype<DTypes::all>(t.dtype(), "set", [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bf16_t>)
      reinterpret_cast<T*>(base)[at] = bf16_t(float(v));
    else
      reinterpret_cast<T*>(base)[at] = static_cast<T>(v);
  });
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = get(t, i);
  return out;
}

// Fills t (any strides) with uniform values in [lo, hi) (integers: rounded down).
inline void fill_random(const Tensor& t, std::mt19937& rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    set(t, i, is_floating(t.dtype()) ? dist(rng) : std::floor(dist(rng)));
}

inline Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937& rng, double lo = -1,
                            double hi = 1) {
  Tensor t = empty(shape, dtype);
  fill_random(t, rng, lo, hi);
  return t;
}

// A non-contiguous tensor of `shape`: storage laid out with dims permuted by `perm`, and
// the view reorders them back (a transposed / permuted view).
inline Tensor permuted_tensor(const Shape& shape, const std::vector<int64_t>& perm, DType dtype,
                              std::mt19937& rng) {
  Shape stored(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) stored[i] = shape[perm[i]];
  Tensor base = empty(stored, dtype);
  Strides st = base.strides(), strides(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[perm[i]] = st[i];
  Tensor view = make_view(base, shape, strides, 0);
  fill_random(view, rng);
  return view;
}

inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return 1e-12;
    case DType::f32:
      return 2e-6;
    case DType::bf16:
      return 1e-2;
    default:
      return 0;
  }
}

// |got - want| <= tol * (scale + |want|) elementwise, with a message naming the first miss.
inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                        const std::string& what, double scale = 1.0) {
  REQUIRE_MESSAGE(got.size() == want.size(), what, ": size ", got.size(), " vs ", want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = (std::isnan(want[i]) && std::isnan(got[i])) || got[i] == want[i] ||
              std::abs(got[i] - want[i]) <= tol * (scale + std::abs(want[i]));
    if (!ok) {
      FAIL_CHECK(what << ": element " << i << " got " << got[i] << " want " << want[i]);
      return;
    }
  }
}

// Runs fn with the given intra-op thread count, restoring the previous one.
template <typename F>
void with_threads(int n, F fn) {
  int previous = get_num_threads();
  set_num_threads(n);
  fn();
  set_num_threads(previous);
}

}  // namespace rg::test
