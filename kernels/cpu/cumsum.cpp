// CPU cumsum along one dim (contract: core/op_table.h, RG_KERNELS): out[.., k, ..] = the sum
// of in[.., 0..k, ..] (reverse: of in[.., k..n-1, ..]), any strides, numeric dtypes. Each
// line is summed in order in double (int64 for integers) and each prefix rounded once to the
// dtype, as PyTorch's CPU kernel does; one task per line, so no result depends on threads.
#include <type_traits>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/lines.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

template <typename T>
void cumsum_lines(const Tensor& out, const Tensor& in, int64_t dim, bool reverse) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  Lines<2> lines(in.shape(), dim, {out.strides(), in.strides()});
  const int64_t n = in.size(dim), os = out.stride(dim), xs = in.stride(dim);
  T* o = out.data<T>();
  const T* x = in.data<T>();
  parallel_for(lines.count(), grain_rows(n), [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l) {
      const auto s = lines.start(l);
      Acc acc = 0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t k = reverse ? n - 1 - step : step;
        acc += Acc(compute_t<T>(x[s[1] + k * xs]));
        o[s[0] + k * os] = T(compute_t<T>(acc));
      }
    }
  });
}

void cumsum(const Tensor& out, const Tensor& in, int64_t dim, bool reverse) {
  RG_KERNEL_CONTRACT(check_cumsum(out, in, dim));
  if (in.numel() == 0) return;
  dispatch_dtype<DTypes::numeric>(in.dtype(), "cumsum", [&]<typename T>(TypeTag<T>) {
    cumsum_lines<T>(out, in, dim, reverse);
  });
}

}  // namespace

void register_cumsum_kernels(KernelTable& k) { k.cumsum = cumsum; }
}  // namespace rg::cpu::RG_CPU_CAP
