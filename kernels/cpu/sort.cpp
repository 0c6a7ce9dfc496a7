// CPU sort along one dim (contract: core/op_table.h, RG_KERNELS), any strides and dtype:
// each line's positions are ordered by std::stable_sort (equal values keep their order;
// NaN sorts above every number, so first when descending, as PyTorch), then the values are
// copied from in at those positions. One task per line; the order of equal values is fixed,
// so sim and cuda (kernels/cuda/sort.cu, a stable merge sort) give the same indices.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/lines.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

// a < b with NaN above every number (and equal to another NaN).
template <typename C>
bool less_nan_last(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
  }
  return a < b;
}

template <typename T>
void sort_lines(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
                bool descending) {
  using C = compute_t<T>;
  Lines<3> lines(in.shape(), dim, {values.strides(), indices.strides(), in.strides()});
  const int64_t n = in.size(dim), vs = values.stride(dim), is = indices.stride(dim);
  const int64_t xs = in.stride(dim);
  T* v = values.data<T>();
  int64_t* ind = indices.data<int64_t>();
  const T* x = in.data<T>();
  parallel_for(lines.count(), grain_rows(n * 16), [&](int64_t begin, int64_t end) {
    std::vector<C> keys(n);
    std::vector<int64_t> order(n);
    for (int64_t l = begin; l < end; ++l) {
      const auto s = lines.start(l);
      for (int64_t k = 0; k < n; ++k) keys[k] = C(x[s[2] + k * xs]);
      std::iota(order.begin(), order.end(), int64_t(0));
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return descending ? less_nan_last(keys[b], keys[a]) : less_nan_last(keys[a], keys[b]);
      });
      for (int64_t k = 0; k < n; ++k) {
        v[s[0] + k * vs] = x[s[2] + order[k] * xs];
        ind[s[1] + k * is] = order[k];
      }
    }
  });
}

void sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
          bool descending) {
  RG_KERNEL_CONTRACT(check_sort(values, indices, in, dim));
  if (in.numel() == 0) return;
  dispatch_dtype<DTypes::all>(in.dtype(), "sort", [&]<typename T>(TypeTag<T>) {
    sort_lines<T>(values, indices, in, dim, descending);
  });
}

}  // namespace

void register_sort_kernels(KernelTable& k) { k.sort = sort; }
}  // namespace rg::cpu::RG_CPU_CAP
