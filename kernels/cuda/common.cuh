// Shared pieces of the kernel files: the device-side bf16 type and dtype conversions, and
// the stream a tensor's kernels run on. Kernels dispatch on dtype with core/dispatch.h,
// passing this bf16 as the storage type: dispatch_dtype<DTypes::floating, bf16>(...).
// Each kernel file ends with register_<file>_kernels(KernelTable&), which
// kernels/builtin.cpp calls (see there).
// Everything is in rg::RG_BACKEND so the cuda and sim compilations never collide.
#pragma once
#include "core/dispatch.h"
#include "core/op_table.h"
#include "kernels/builtin.h"
#include "kernels/cuda/device_errors.h"
#include "kernels/cuda/portability.cuh"
#include "kernels/cuda/stream.h"

namespace rg::RG_BACKEND {

// bfloat16 as stored in memory: the upper half of an f32 (same layout as rg::bf16_t).
struct bf16 {
  uint16_t bits;
};

RG_HD inline float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
RG_HD inline uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
RG_HD inline float bf16_to_float(bf16 v) { return bits_to_float(uint32_t(v.bits) << 16); }
RG_HD inline bf16 float_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{uint16_t(u >> 16)};
}

// The type arithmetic is done in: float for f32/bf16, double for f64, int64 for integers.
template <typename T>
struct AccOf {
  using type = T;
};
template <>
struct AccOf<bf16> {
  using type = float;
};
template <>
struct AccOf<int32_t> {
  using type = int64_t;
};
template <>
struct AccOf<bool> {
  using type = int64_t;
};
template <typename T>
using acc_t = typename AccOf<T>::type;

// Value conversion between storage types, as static_cast would do (bf16 through f32, any
// value to bool as != 0).
template <typename To, typename From>
RG_HD inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, bf16>) {
    return convert<To>(bf16_to_float(x));
  } else if constexpr (std::is_same_v<To, bf16>) {
    return float_to_bf16(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

// The stream kernels on this tensor's device are launched on (the thread's current one).
inline gpu_stream_t stream_for(const Tensor& t) {
  return static_cast<gpu_stream_t>(gpu::current_stream(t.device()).handle);
}

// `t` itself when contiguous with `dtype`, else a contiguous copy converted to `dtype`
// (made by this backend's copy kernel). Undefined stays undefined.
inline Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (!t.defined() || (t.is_contiguous() && t.dtype() == dtype)) return t;
  Tensor c = empty(t.shape(), dtype, t.device());
  kernel_table(RG_BACKEND_DEVICE).copy(c, t);
  return c;
}

// Lets a kernel reject bad input (an index out of range) without a host sync: a slot of
// the device's error ring (kernels/cuda/device_errors.h). The kernel stores 1 and the
// offending value in slot[0..1]; the host throws before + value + after at its next
// synchronization.
struct DeviceErrorSlot {
  int64_t* slot;
  DeviceErrorSlot(Device device, std::string before, std::string after)
      : slot(gpu::claim_error_slot(device, std::move(before), std::move(after))) {}
  int64_t* data() const { return slot; }
};

// Stores the first error of a launch into a DeviceErrorSlot: slot[0] goes from 0 to 1 once,
// and only the thread that flipped it writes the value (plain stores from every failing
// thread would race, and the value reported would be any of theirs).
__device__ inline void record_device_error(int64_t* slot, int64_t value) {
  auto* flag = reinterpret_cast<unsigned long long*>(slot);
  if (atomicCAS(flag, 0ull, 1ull) == 0ull) slot[1] = value;
}

// Device-to-device memcpy on `stream` (asynchronous on cuda).
inline void device_memcpy(void* dst, const void* src, size_t nbytes, gpu_stream_t stream) {
  if (nbytes == 0) return;
#if RG_SIM
  auto copy = [dst, src, nbytes] {
    memmove(dst, src, nbytes);
    sim::check::mark_written(dst, nbytes);  // a copy sim-check's load/store hooks do not see
  };
  if (sim::is_delayed(stream))
    sim::enqueue(stream, copy);
  else
    copy();
#else
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream));
#endif
}

}  // namespace rg::RG_BACKEND
