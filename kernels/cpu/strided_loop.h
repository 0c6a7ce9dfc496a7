// The CPU backend's one loop over strided tensors. N tensors of the same (already
// broadcast) shape are walked together: dims that are contiguous in every tensor are
// merged, then the innermost run is handed to `inner(ptrs, byte_strides, n)` so kernels
// write a tight loop (and a contiguous fast path when every stride equals the item size).
// Outer runs are split across threads with rg::parallel_for.
#pragma once
#include <array>
#include <cstdint>

#include "core/parallel.h"
#include "core/tensor.h"
#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

template <int N>
struct StridedLoop {
  static constexpr int kInlineDims = 16;  // outer dims the odometer keeps on the stack
  int ndim = 0;
  Shape shape;                          // merged shape, innermost last
  std::array<Strides, N> byte_strides;  // per tensor, per merged dim
  std::array<char*, N> base;

  explicit StridedLoop(const std::array<const Tensor*, N>& tensors) {
    const Shape& full = tensors[0]->shape();
    for (int t = 0; t < N; ++t) base[t] = static_cast<char*>(tensors[t]->data_ptr());
    // Drop size-1 dims, then merge neighbours that are contiguous in every tensor.
    for (size_t d = 0; d < full.size(); ++d) {
      if (full[d] == 1) continue;
      bool merge = !shape.empty();
      for (int t = 0; t < N && merge; ++t) {
        int64_t st = tensors[t]->strides()[d] * static_cast<int64_t>(itemsize(tensors[t]->dtype()));
        merge = byte_strides[t].back() == st * full[d];
      }
      if (merge) {
        shape.back() *= full[d];
        for (int t = 0; t < N; ++t)
          byte_strides[t].back() =
              tensors[t]->strides()[d] * static_cast<int64_t>(itemsize(tensors[t]->dtype()));
      } else {
        shape.push_back(full[d]);
        for (int t = 0; t < N; ++t)
          byte_strides[t].push_back(tensors[t]->strides()[d] *
                                    static_cast<int64_t>(itemsize(tensors[t]->dtype())));
      }
    }
    if (shape.empty()) {  // scalar or all size-1
      shape.push_back(numel_of(full) == 0 ? 0 : 1);
      for (int t = 0; t < N; ++t) byte_strides[t].push_back(0);
    }
    ndim = static_cast<int>(shape.size());
  }

  // inner(std::array<char*, N> ptrs, std::array<int64_t, N> inner_byte_strides, int64_t n)
  template <typename F>
  void run(F&& inner, int64_t grain = kGrainSize) const {
    int64_t inner_n = shape.back();
    if (inner_n == 0) return;
    int64_t outer = 1;
    for (int d = 0; d + 1 < ndim; ++d) outer *= shape[d];
    std::array<int64_t, N> inner_stride;
    for (int t = 0; t < N; ++t) inner_stride[t] = byte_strides[t].back();
    if (outer == 1) {  // one long run: split it across threads
      parallel_for(inner_n, grain, [&](int64_t begin, int64_t end) {
        std::array<char*, N> ptrs = base;
        for (int t = 0; t < N; ++t) ptrs[t] += begin * inner_stride[t];
        inner(ptrs, inner_stride, end - begin);
      });
      return;
    }
    int64_t rows_per_grain = std::max<int64_t>(1, grain / inner_n);
    parallel_for(outer, rows_per_grain, [&](int64_t begin, int64_t end) {
      // The first row's index by division, then an odometer over the outer dims (a division
      // per dim per row was a seventh of copying attention's heads, rows of 32-64 floats).
      if (begin >= end) return;
      std::array<int64_t, kInlineDims> inline_idx;  // no allocation per task, up to 16 dims
      Shape heap_idx(ndim - 1 > kInlineDims ? ndim - 1 : 0);
      int64_t* idx = heap_idx.empty() ? inline_idx.data() : heap_idx.data();
      std::array<char*, N> ptrs = base;
      int64_t rem = begin;
      for (int d = ndim - 2; d >= 0; --d) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
        for (int t = 0; t < N; ++t) ptrs[t] += idx[d] * byte_strides[t][d];
      }
      for (int64_t row = begin;;) {
        inner(ptrs, inner_stride, inner_n);
        if (++row == end) break;
        for (int d = ndim - 2; d >= 0; --d) {  // next row: carry through the outer dims
          for (int t = 0; t < N; ++t) ptrs[t] += byte_strides[t][d];
          if (++idx[d] < shape[d]) break;
          for (int t = 0; t < N; ++t) ptrs[t] -= shape[d] * byte_strides[t][d];
          idx[d] = 0;
        }
      }
    });
  }
};

}  // namespace rg::cpu::RG_CPU_CAP
