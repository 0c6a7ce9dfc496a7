// CPU gather and index_put along one dim (contracts: core/op_table.h, RG_KERNELS), any
// strides and dtype.
//   gather:    out[p] = in[p with coordinate dim := index[p]]   (element bytes copied)
//   index_put: out[p with coordinate dim := index[p]] = src[p]   (accumulate: +=)
// Index values are read into a row-major int64 vector and range-checked before any parallel
// region. Each line along dim is one task's: index_put's task writes (or adds, in the compute
// type, rounding at each add) its positions in order, and lines own disjoint parts of out, so
// no two tasks touch one element and the result does not depend on the thread count.
#include <cstring>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/lines.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

std::vector<int64_t> checked_index(const Tensor& index, int64_t size, int64_t dim, const char* op) {
  std::vector<int64_t> idx = read_indices(index, op);
  for (int64_t i : idx)
    RG_CHECK(i >= 0 && i < size, op, ": index ", i, " out of range for dim ", dim, " of size ",
             size);
  return idx;
}

void gather(const Tensor& out, const Tensor& in, const Tensor& index, int64_t dim) {
  RG_KERNEL_CONTRACT(check_gather(out, in, index, dim));
  std::vector<int64_t> idx = checked_index(index, in.size(dim), dim, "gather");
  if (out.numel() == 0) return;
  Lines<3> lines(index.shape(), dim,
                 {out.strides(), in.strides(), contiguous_strides(index.shape())});
  const int64_t n = index.size(dim), os = out.stride(dim), xs = in.stride(dim);
  const int64_t is = contiguous_strides(index.shape())[dim];
  const size_t item = itemsize(in.dtype());
  char* o = static_cast<char*>(out.data_ptr());
  const char* x = static_cast<const char*>(in.data_ptr());
  parallel_for(lines.count(), grain_rows(n), [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l) {
      const auto s = lines.start(l);
      for (int64_t k = 0; k < n; ++k)
        std::memcpy(o + (s[0] + k * os) * item, x + (s[1] + idx[s[2] + k * is] * xs) * item, item);
    }
  });
}

template <typename T>
void put_lines(const Tensor& out, const Tensor& src, const std::vector<int64_t>& idx,
               const Tensor& index, int64_t dim, bool accumulate) {
  using C = compute_t<T>;
  Lines<3> lines(index.shape(), dim,
                 {out.strides(), src.strides(), contiguous_strides(index.shape())});
  const int64_t n = index.size(dim), os = out.stride(dim), ss = src.stride(dim);
  const int64_t is = contiguous_strides(index.shape())[dim];
  T* o = out.data<T>();
  const T* x = src.data<T>();
  parallel_for(lines.count(), grain_rows(n), [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l) {
      const auto s = lines.start(l);
      for (int64_t k = 0; k < n; ++k) {
        T& dst = o[s[0] + idx[s[2] + k * is] * os];
        const T value = x[s[1] + k * ss];
        if constexpr (std::is_same_v<T, bool>)
          dst = value;
        else
          dst = accumulate ? T(C(dst) + C(value)) : value;
      }
    }
  });
}

void index_put(const Tensor& out, const Tensor& index, const Tensor& src, int64_t dim,
               bool accumulate) {
  RG_KERNEL_CONTRACT(check_index_put(out, index, src, dim, accumulate));
  std::vector<int64_t> idx = checked_index(index, out.size(dim), dim, "index_put");
  if (index.numel() == 0) return;
  dispatch_dtype<DTypes::all>(out.dtype(), "index_put", [&]<typename T>(TypeTag<T>) {
    put_lines<T>(out, src, idx, index, dim, accumulate);
  });
}

}  // namespace

void register_index_kernels(KernelTable& k) {
  k.gather = gather;
  k.index_put = index_put;
}
}  // namespace rg::cpu::RG_CPU_CAP
