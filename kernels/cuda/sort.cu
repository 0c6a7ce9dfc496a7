// sort along one dim (contract: core/op_table.h, RG_KERNELS), any strides and dtype. One
// thread per line runs a bottom-up merge sort of the line's positions (int64, in a scratch
// buffer of 2 n per line), comparing in's values: stable, NaN above every number, so the
// same order as the cpu kernel's std::stable_sort, bitwise. The cost: O(n log n) steps on
// one thread per line, with lines in parallel (a [1, 50257] row of logits: ~16 passes of
// 50k steps on one thread, milliseconds); enough for sampling's top-k, not a sort engine.
#include <type_traits>

#include "kernels/cuda/index_lines.cuh"

namespace rg::RG_BACKEND {
namespace {

// a < b with NaN above every number (and equal to another NaN).
template <typename A>
RG_HD inline bool less_nan_last(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (b != b) return a == a;
    if (a != a) return false;
  }
  return a < b;
}

struct SortGeometry {
  int64_t lines, n;
  int64_t values_stride, indices_stride, in_stride;  // strides at dim
  bool descending;
};

// offsets: values, indices, in. scratch: 2 n int64 per line.
template <typename T>
__global__ void sort_kernel(T* values, int64_t* indices, const T* in, int64_t* scratch,
                            OffsetCalc<3> calc, SortGeometry g) {
  using A = acc_t<T>;
  const int64_t line = global_thread();
  if (line >= g.lines) return;
  int64_t off[3];
  calc.offsets(line, off);
  const T* x = in + off[2];
  auto before = [&](int64_t a, int64_t b) {  // position a sorts before position b
    const A va = convert<A>(x[a * g.in_stride]), vb = convert<A>(x[b * g.in_stride]);
    return g.descending ? less_nan_last(vb, va) : less_nan_last(va, vb);
  };
  int64_t* from = scratch + line * 2 * g.n;
  int64_t* to = from + g.n;
  for (int64_t k = 0; k < g.n; ++k) from[k] = k;
  for (int64_t width = 1; width < g.n; width *= 2) {
    for (int64_t lo = 0; lo < g.n; lo += 2 * width) {
      const int64_t mid = min_of(lo + width, g.n), hi = min_of(lo + 2 * width, g.n);
      int64_t i = lo, j = mid;
      for (int64_t k = lo; k < hi; ++k)  // the left run's element unless the right's is before
        to[k] = (i < mid && (j >= hi || !before(from[j], from[i]))) ? from[i++] : from[j++];
    }
    int64_t* swap = from;
    from = to;
    to = swap;
  }
  for (int64_t k = 0; k < g.n; ++k) {
    values[off[0] + k * g.values_stride] = x[from[k] * g.in_stride];
    indices[off[1] + k * g.indices_stride] = from[k];
  }
}

void run_sort(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
              bool descending) {
  const char* op = "sort";
  RG_KERNEL_CONTRACT(check_sort(values, indices, in, dim));
  if (in.numel() == 0) return;
  SortGeometry g{line_count(in.shape(), dim), in.size(dim),   values.stride(dim),
                 indices.stride(dim),         in.stride(dim), descending};
  auto calc =
      line_offsets<3>(op, in.shape(), dim, {&values.strides(), &indices.strides(), &in.strides()});
  Tensor scratch = empty({g.lines, 2 * g.n}, DType::i64, in.device());
  dispatch_dtype<DTypes::all, bf16>(in.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(sort_kernel<T>, one_thread_per_item(op, g.lines, values),
           static_cast<T*>(values.data_ptr()), static_cast<int64_t*>(indices.data_ptr()),
           static_cast<const T*>(in.data_ptr()), static_cast<int64_t*>(scratch.data_ptr()), calc,
           g);
  });
}

}  // namespace

void register_sort_kernels(KernelTable& k) { k.sort = run_sort; }
}  // namespace rg::RG_BACKEND
