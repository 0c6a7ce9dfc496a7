// Timing and filling helpers of bench/kernels (kernels.cpp, kernels_attention.cpp): a call's
// milliseconds from device events after two warm-up calls, and a tensor filled on the device.
#pragma once
#include <functional>

#include "core/op_table.h"
#include "core/tensor.h"
#include "kernels/builtin.h"
#include "kernels/cuda/stream.h"

namespace rg::bench {

// Milliseconds per call of fn, timed with device events after warm-up.
inline double time_ms(Device device, int iters, const std::function<void()>& fn) {
  fn();
  fn();
  gpu::Stream stream = gpu::current_stream(device);
  gpu::Event start(device, true), stop(device, true);
  start.record(stream);
  for (int i = 0; i < iters; ++i) fn();
  stop.record(stream);
  stop.synchronize();
  return start.elapsed_ms(stop) / iters;
}

inline Tensor filled(const Shape& shape, DType dtype, Device device, double value) {
  Tensor t = empty(shape, dtype, device);
  kernel_table(device.type).fill(t, value);
  return t;
}

}  // namespace rg::bench
