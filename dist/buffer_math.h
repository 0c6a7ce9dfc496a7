// The local arithmetic of the collectives on one rank's flat buffers: accumulate what a
// neighbour sent, divide for an average, copy with a dtype conversion. It runs through the
// kernel table that ops use (kernels/builtin.h), for any device: buffers in host memory
// (cpu, and sim, whose memory is host memory) by the cpu kernels, others by their
// device's own kernels (cuda). All tensors are contiguous, of one dtype and device
// (conversions and cross-device copies excepted), and of equal numel.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "dist/work.h"

namespace rg::dist {

// acc = acc (op) incoming; avg accumulates a sum (divide afterwards with divide_by).
void reduce_into(const Tensor& acc, const Tensor& incoming, CombineOp op);
// t /= n (f32 and f64).
void divide_by(const Tensor& t, int64_t n);
// dst = src: bytes across devices when the dtypes agree, else a converting copy on one device.
void copy_buffer(const Tensor& dst, const Tensor& src);
// A contiguous 1-D view of elements [start, start + length) of a contiguous tensor.
Tensor flat_slice(const Tensor& t, int64_t start, int64_t length);
// Where N segments of `count` elements lie, as the ring cuts them: the first count % N one
// element longer (element offsets; offset[N] is the end).
std::vector<int64_t> uneven_segments(int64_t count, int n);

}  // namespace rg::dist
