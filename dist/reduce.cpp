// Local reductions of the collectives. Host memory: loops written here (the compiler
// vectorises them). cuda: the binary/copy kernels of the cuda kernel table.
#include "dist/reduce.h"

#include <algorithm>
#include <cstring>

#include "core/device_interface.h"
#include "core/op_table.h"
#include "kernels/builtin.h"

namespace rg::dist {

namespace {

template <typename T>
void reduce_loop(T* __restrict acc, const T* __restrict in, int64_t n, ReduceOp op) {
  if (op == ReduceOp::max) {
    for (int64_t i = 0; i < n; ++i) {
      T a = acc[i], b = in[i];
      acc[i] = (b > a || b != b) ? b : a;  // NaN wins, as in torch.maximum
    }
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
  }
}

void bf16_reduce_loop(bf16_t* acc, const bf16_t* in, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    float a = acc[i], b = in[i];
    float r = op == ReduceOp::max ? ((b > a || b != b) ? b : a) : a + b;
    acc[i] = bf16_t(r);
  }
}

void check_same(const Tensor& a, const Tensor& b, const char* what) {
  RG_CHECK(a.numel() == b.numel() && a.device() == b.device(), what, ": ", a.numel(),
           " elements on ", a.device().str(), " vs ", b.numel(), " on ", b.device().str());
}

const KernelTable& cuda_kernels(const char* what, bool has_kernel) {
  RG_CHECK(has_kernel, what, ": the cuda kernels are not built into this ringgrad");
  return kernel_table(DeviceType::cuda);
}

}  // namespace

Tensor flat_slice(const Tensor& t, int64_t start, int64_t length) {
  return make_view(t, {length}, {1}, t.offset() + start);
}

void reduce_into(const Tensor& acc, const Tensor& incoming, ReduceOp op) {
  check_same(acc, incoming, "reduce_into");
  RG_CHECK(acc.dtype() == incoming.dtype(), "reduce_into: dtypes ", acc.dtype(), " and ",
           incoming.dtype());
  const int64_t n = acc.numel();
  if (n == 0) return;
  if (acc.device().is_host_memory()) {
    switch (acc.dtype()) {
      case DType::f32:
        return reduce_loop(acc.data<float>(), incoming.data<float>(), n, op);
      case DType::f64:
        return reduce_loop(acc.data<double>(), incoming.data<double>(), n, op);
      case DType::i32:
        return reduce_loop(acc.data<int32_t>(), incoming.data<int32_t>(), n, op);
      case DType::i64:
        return reduce_loop(acc.data<int64_t>(), incoming.data<int64_t>(), n, op);
      case DType::bf16:
        return bf16_reduce_loop(acc.data<bf16_t>(), incoming.data<bf16_t>(), n, op);
      default:
        RG_FAIL("reduce_into: unsupported dtype ", acc.dtype());
    }
  }
  auto binary = kernel_table(DeviceType::cuda).binary;
  cuda_kernels("reduce_into", binary != nullptr);
  binary(op == ReduceOp::max ? BinaryOp::maximum : BinaryOp::add, acc, acc, incoming);
}

void divide_by(const Tensor& t, int64_t n) {
  if (n == 1 || t.numel() == 0) return;
  if (t.device().is_host_memory()) {
    auto loop = [&]<typename T>(T* p) {
      const T d = static_cast<T>(n);
      for (int64_t i = 0; i < t.numel(); ++i) p[i] /= d;
    };
    switch (t.dtype()) {
      case DType::f32:
        return loop(t.data<float>());
      case DType::f64:
        return loop(t.data<double>());
      default:
        RG_FAIL("divide_by: unsupported dtype ", t.dtype());
    }
  }
  auto binary = kernel_table(DeviceType::cuda).binary;
  cuda_kernels("avg", binary != nullptr);
  // The divisor as a one-element device tensor, broadcast with stride 0.
  Tensor host = empty({1}, t.dtype());
  if (t.dtype() == DType::f32)
    *host.data<float>() = static_cast<float>(n);
  else
    *host.data<double>() = static_cast<double>(n);
  Tensor divisor = empty({1}, t.dtype(), t.device());
  copy_into(divisor, host);
  binary(BinaryOp::div, t, t, make_view(divisor, t.shape(), Strides(t.dim(), 0), 0));
}

void copy_into(const Tensor& dst, const Tensor& src) {
  RG_CHECK(dst.numel() == src.numel(), "copy_into: ", dst.numel(), " vs ", src.numel(),
           " elements");
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype() == src.dtype()) {
    if (dst.device().is_host_memory() && src.device().is_host_memory()) {
      std::memcpy(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    } else {
      Device device = dst.device().is_cuda() ? dst.device() : src.device();
      device_interface(device.type)
          .copy(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(), dst.nbytes());
    }
    return;
  }
  check_same(dst, src, "copy_into");
  if (dst.device().is_host_memory()) {
    if (dst.dtype() == DType::f32 && src.dtype() == DType::bf16) {
      float* d = dst.data<float>();
      const bf16_t* s = src.data<bf16_t>();
      for (int64_t i = 0; i < n; ++i) d[i] = s[i];
      return;
    }
    if (dst.dtype() == DType::bf16 && src.dtype() == DType::f32) {
      bf16_t* d = dst.data<bf16_t>();
      const float* s = src.data<float>();
      for (int64_t i = 0; i < n; ++i) d[i] = bf16_t(s[i]);
      return;
    }
    RG_FAIL("copy_into: conversion from ", src.dtype(), " to ", dst.dtype(), " not supported");
  }
  auto copy = kernel_table(DeviceType::cuda).copy;
  cuda_kernels("copy_into", copy != nullptr);
  copy(dst, src);
}

}  // namespace rg::dist
