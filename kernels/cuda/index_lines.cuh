// Shared by the kernels that walk lines along one dim (index, cumsum, sort): the launch of
// one thread per item (a line, or an element for gather) in 1-D blocks without barriers, and
// the offsets of a line's first element in each operand (OffsetCalc over the shape with the
// dim's size set to 1, which make_offset_calc drops).
#pragma once
#include <array>

#include "kernels/contracts.h"
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {

constexpr int kLineBlock = 128;

inline LaunchConfig one_thread_per_item(const char* name, int64_t items, const Tensor& t) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(items, kLineBlock)));
  cfg.block = dim3(kLineBlock);
  cfg.stream = stream_for(t);
  cfg.uses_sync = false;
  return cfg;
}

__device__ inline int64_t global_thread() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }

// How many lines `shape` has along `dim`.
inline int64_t line_count(const Shape& shape, int64_t dim) {
  return numel_of(line_shape(shape, dim));
}

template <int N>
OffsetCalc<N> line_offsets(const char* op, const Shape& shape, int64_t dim,
                           const std::array<const Strides*, N>& strides) {
  return make_offset_calc<N>(op, line_shape(shape, dim), strides);
}

}  // namespace rg::RG_BACKEND
