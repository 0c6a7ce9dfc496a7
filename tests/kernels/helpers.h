// Helpers of the gpu kernel tests: random cpu tensors (optionally non-contiguous), exact
// mirrors of a cpu tensor on sim/cuda (same storage bytes, shape, strides and offset),
// reading values back, and comparing with a tolerance per dtype.
// GPU_KERNEL_TEST(name) defines one test body run as "sim: name" and, when a GPU is
// present, as "cuda: name"; without one the cuda cases are skipped (and one test says why).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/device_interface.h"
#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/tensor.h"
#include "kernels/builtin.h"

namespace rg::test {

inline bool cuda_present() { return device_available(DeviceType::cuda); }

#define GPU_KERNEL_TEST(name)                                                    \
  static void name##_body(::rg::Device device);                                  \
  TEST_CASE("sim: " #name) { name##_body(::rg::Device(::rg::DeviceType::sim)); } \
  TEST_CASE("cuda: " #name* doctest::skip(!::rg::test::cuda_present())) {        \
    name##_body(::rg::Device(::rg::DeviceType::cuda));                           \
  }                                                                              \
  static void name##_body([[maybe_unused]] ::rg::Device device)

// Writes value v (as double) at storage element `index` of t's storage (host memory).
inline void store(const Tensor& t, int64_t element, double v) {
  char* base = static_cast<char*>(t.storage()->data) + element * itemsize(t.dtype());
  dispatch_dtype<DTypes::all>(t.dtype(), "store", [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bf16_t>)
      *reinterpret_cast<T*>(base) = bf16_t(float(v));
    else if constexpr (std::is_same_v<T, bool>)
      *reinterpret_cast<T*>(base) = v != 0;
    else
      *reinterpret_cast<T*>(base) = T(v);
  });
}
inline double load(const void* p, DType dtype) {
  return dispatch_dtype<DTypes::all>(dtype, "load", [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bf16_t>)
      return double(float(*static_cast<const T*>(p)));
    else
      return double(*static_cast<const T*>(p));
  });
}

// A cpu tensor of `shape` with values uniform in [lo, hi) (integers: rounded). Its storage
// is filled entirely, so views of it are too.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -2,
                            double hi = 2) {
  Tensor t = empty(shape, dtype, kCPU);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  int64_t n = static_cast<int64_t>(t.storage()->nbytes / itemsize(dtype));
  for (int64_t i = 0; i < n; ++i) {
    double v = dist(gen);
    if (dtype == DType::i32 || dtype == DType::i64) v = std::round(v);
    if (dtype == DType::b8) v = v > (lo + hi) / 2;
    store(t, i, v);
  }
  return t;
}

// A non-contiguous cpu tensor of `shape`: the transpose of a random [.., last, first] base
// for 2+ dims, every second element of a 1-D tensor.
inline Tensor random_strided(const Shape& shape, DType dtype, uint64_t seed) {
  if (shape.size() == 1) {
    Tensor base = random_tensor({shape[0] * 2}, dtype, seed);
    return make_view(base, shape, {2}, 1);
  }
  Shape swapped = shape;
  std::swap(swapped.front(), swapped.back());
  Tensor base = random_tensor(swapped, dtype, seed);
  Strides st = base.strides();
  std::swap(st.front(), st.back());
  return make_view(base, shape, st, 0);
}

// A view of `t` with the same metadata over a copy of its storage on `device`.
inline Tensor mirror(const Tensor& t, Device device) {
  auto storage = allocate_storage(t.storage()->nbytes, device);
  const auto& dev = device_interface(device.is_cpu() ? t.device().type : device.type);
  dev.copy(storage->data, device, t.storage()->data, t.device(), t.storage()->nbytes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage;
  impl->shape = t.shape();
  impl->strides = t.strides();
  impl->offset = t.offset();
  impl->dtype = t.dtype();
  return Tensor(impl);
}

// Row-major values of any tensor (device tensors are copied to the host first).
inline std::vector<double> values(const Tensor& t) {
  Tensor h = t.device().is_cpu() ? t : mirror(t, kCPU);
  std::vector<double> out;
  out.reserve(h.numel());
  const char* base = static_cast<const char*>(h.storage()->data);
  size_t item = itemsize(h.dtype());
  std::vector<int64_t> idx(h.dim(), 0);
  for (int64_t n = 0; n < h.numel(); ++n) {
    int64_t off = h.offset();
    for (int64_t d = 0; d < h.dim(); ++d) off += idx[d] * h.stride(d);
    out.push_back(load(base + off * item, h.dtype()));
    for (int64_t d = h.dim() - 1; d >= 0; --d) {
      if (++idx[d] < h.size(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

inline double default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 2e-5;
    case DType::f64:
      return 1e-11;
    case DType::bf16:
      return 1.6e-2;
    default:
      return 0;
  }
}

// Checks |a - b| <= tol * (1 + |b|) elementwise (NaNs must match), reporting the first miss.
inline void expect_close(const Tensor& got, const Tensor& want, double tol = -1,
                         const std::string& what = "") {
  if (tol < 0) tol = default_tolerance(want.dtype());
  REQUIRE(got.shape() == want.shape());
  std::vector<double> g = values(got), w = values(want);
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = (std::isnan(g[i]) && std::isnan(w[i])) ||
              std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i]));
    if (!ok && bad++ == 0) first = static_cast<int64_t>(i);
  }
  INFO(what, " shape ", shape_str(want.shape()), " dtype ", std::string(dtype_name(want.dtype())));
  if (bad) {
    INFO("first mismatch at ", first, ": got ", g[first], ", want ", w[first], " (", bad, " of ",
         g.size(), " differ)");
    CHECK(bad == 0);
  }
}

inline const KernelTable& cpu_kernels() { return kernel_table(DeviceType::cpu); }
inline const KernelTable& kernels_of(Device d) { return kernel_table(d.type); }

}  // namespace rg::test
