// Small helpers shared by the CPU kernels: materialise a contiguous (and possibly
// converted) copy of a tensor through the registered copy kernel, read an index tensor
// (i64 or i32, any strides) into a vector, and pick a fixed-size chunking that does not
// depend on the thread count (so parallel reductions give the same bits for any team).
#pragma once
#include <cstdint>
#include <vector>

#include "core/op_table.h"
#include "kernels/builtin.h"
#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

// `t` itself when it is already contiguous with `dtype`, else a contiguous copy.
inline Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = empty(t.shape(), dtype, t.device());
  kernel_table(DeviceType::cpu).copy(out, t);
  return out;
}

// Copies src into dst (same shape), converting the dtype when they differ.
inline void copy_into(const Tensor& dst, const Tensor& src) {
  kernel_table(DeviceType::cpu).copy(dst, src);
}

// All elements of an integer index tensor in row-major order, as int64.
inline std::vector<int64_t> read_indices(const Tensor& indices, const char* op) {
  RG_DEBUG_ASSERT(indices.dtype() == DType::i64 || indices.dtype() == DType::i32, op,
                  ": indices must be int64 or int32, got ", indices.dtype());
  Tensor flat = contiguous_as(indices, DType::i64);
  const int64_t* p = flat.data<int64_t>();
  return std::vector<int64_t>(p, p + flat.numel());
}

}  // namespace rg::cpu::RG_CPU_CAP
