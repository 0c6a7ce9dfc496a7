// cumsum along one dim (contract: core/op_table.h, RG_KERNELS): out[.., k, ..] = the sum of
// in[.., 0..k, ..] (reverse: of in[.., k..n-1, ..]), any strides, numeric dtypes. One thread
// per line sums it in order in double (int64 for integers) and rounds each prefix once to
// the dtype: the cpu kernel's arithmetic, so the results are bitwise the cpu's. The cost:
// parallelism is the number of lines, each a sequential walk of the dim.
#include <type_traits>

#include "kernels/cuda/index_lines.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T>
using scan_acc_t = std::conditional_t<std::is_integral_v<acc_t<T>>, int64_t, double>;

// offsets: out, in.
template <typename T>
__global__ void cumsum_kernel(T* out, const T* in, OffsetCalc<2> calc, int64_t lines, int64_t n,
                              int64_t out_stride, int64_t in_stride, bool reverse) {
  const int64_t line = global_thread();
  if (line >= lines) return;
  int64_t off[2];
  calc.offsets(line, off);
  scan_acc_t<T> acc = 0;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t k = reverse ? n - 1 - step : step;
    acc += convert<scan_acc_t<T>>(in[off[1] + k * in_stride]);
    out[off[0] + k * out_stride] = convert<T>(acc);
  }
}

void run_cumsum(const Tensor& out, const Tensor& in, int64_t dim, bool reverse) {
  const char* op = "cumsum";
  RG_KERNEL_CONTRACT(check_cumsum(out, in, dim));
  if (in.numel() == 0) return;
  const int64_t lines = line_count(in.shape(), dim);
  auto calc = line_offsets<2>(op, in.shape(), dim, {&out.strides(), &in.strides()});
  dispatch_dtype<DTypes::numeric, bf16>(in.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(cumsum_kernel<T>, one_thread_per_item(op, lines, out), static_cast<T*>(out.data_ptr()),
           static_cast<const T*>(in.data_ptr()), calc, lines, in.size(dim), out.stride(dim),
           in.stride(dim), reverse);
  });
}

}  // namespace

void register_cumsum_kernels(KernelTable& k) { k.cumsum = run_cumsum; }
}  // namespace rg::RG_BACKEND
