// The local arithmetic of the collectives, done on the tensors' device: plain loops for host
// memory (cpu and sim), the cuda kernel table for GPUs. All tensors are contiguous, of one
// dtype and device (conversions excepted), and of equal numel.
#pragma once
#include "core/tensor.h"
#include "dist/process_group.h"

namespace rg::dist {

// acc = acc (op) incoming; avg accumulates a sum (divide afterwards with divide_by).
void reduce_into(const Tensor& acc, const Tensor& incoming, ReduceOp op);
// t /= n (floating types).
void divide_by(const Tensor& t, int64_t n);
// dst = src, converting the dtype when they differ (bf16 <-> f32).
void copy_into(const Tensor& dst, const Tensor& src);
// A contiguous 1-D view of elements [start, start + length) of a contiguous tensor.
Tensor flat_slice(const Tensor& t, int64_t start, int64_t length);

}  // namespace rg::dist
