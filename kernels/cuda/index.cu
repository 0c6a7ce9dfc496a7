// gather and index_put along one dim (contracts: core/op_table.h, RG_KERNELS), any strides
// and dtype; index int64 (any strides, expanded views allowed).
//   gather:    out[p] = in[p with coordinate dim := index[p]]: one thread per element of
//              out, whose offsets come from one OffsetCalc over index's shape (in's stride
//              at dim taken as 0, then index[p] times it added).
//   index_put: out[p with coordinate dim := index[p]] = src[p] (accumulate: +=): one thread
//              per line along dim, walking its positions in order. Lines own disjoint parts
//              of out, so there are no atomics and the result is bitwise reproducible (a
//              repeated index: the last write wins, sums are added in index order, as the
//              cpu kernel does). The cost: parallelism is the number of lines (index_add of
//              N rows into [V, D] runs D threads of N steps each).
// An index out of range is reported through a DeviceErrorSlot and thrown at the next host
// synchronization (kernels/cuda/device_errors.h).
#include "kernels/cuda/index_lines.cuh"

namespace rg::RG_BACKEND {
namespace {

__device__ inline bool index_in_range(int64_t v, int64_t size, int64_t* error) {
  if (v >= 0 && v < size) return true;
  record_device_error(error, v);
  return false;
}

// offsets: out, index, in (in's stride at dim is 0 in the calculator).
template <typename T>
__global__ void gather_kernel(T* out, const T* in, const int64_t* index, OffsetCalc<3> calc,
                              int64_t n, int64_t size, int64_t in_stride, int64_t* error) {
  const int64_t i = global_thread();
  if (i >= n) return;
  int64_t off[3];
  calc.offsets(i, off);
  const int64_t v = index[off[1]];
  out[off[0]] = index_in_range(v, size, error) ? in[off[2] + v * in_stride] : convert<T>(0);
}

struct PutGeometry {
  int64_t lines, n, size;                        // lines, positions per line, out's size at dim
  int64_t out_stride, index_stride, src_stride;  // strides at dim
};

// offsets: out, index, src.
template <typename T>
__global__ void index_put_kernel(T* out, const int64_t* index, const T* src, OffsetCalc<3> calc,
                                 PutGeometry g, bool accumulate, int64_t* error) {
  const int64_t line = global_thread();
  if (line >= g.lines) return;
  int64_t off[3];
  calc.offsets(line, off);
  for (int64_t k = 0; k < g.n; ++k) {
    const int64_t v = index[off[1] + k * g.index_stride];
    if (!index_in_range(v, g.size, error)) return;
    T& dst = out[off[0] + v * g.out_stride];
    const T value = src[off[2] + k * g.src_stride];
    dst = accumulate ? convert<T>(convert<acc_t<T>>(dst) + convert<acc_t<T>>(value)) : value;
  }
}

std::string range_message(int64_t dim, int64_t size) {
  return str(" out of range for dim ", dim, " of size ", size);
}

void run_gather(const Tensor& out, const Tensor& in, const Tensor& index, int64_t dim) {
  const char* op = "gather";
  RG_KERNEL_CONTRACT(check_gather(out, in, index, dim));
  const int64_t n = out.numel();
  if (n == 0) return;
  Strides in_strides = in.strides();
  in_strides[dim] = 0;
  auto calc =
      make_offset_calc<3>(op, index.shape(), {&out.strides(), &index.strides(), &in_strides});
  DeviceErrorSlot error(out.device(), str(op, ": index "), range_message(dim, in.size(dim)));
  dispatch_dtype<DTypes::all, bf16>(in.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(gather_kernel<T>, one_thread_per_item(op, n, out), static_cast<T*>(out.data_ptr()),
           static_cast<const T*>(in.data_ptr()), static_cast<const int64_t*>(index.data_ptr()),
           calc, n, in.size(dim), in.stride(dim), error.data());
  });
}

void run_index_put(const Tensor& out, const Tensor& index, const Tensor& src, int64_t dim,
                   bool accumulate) {
  const char* op = "index_put";
  RG_KERNEL_CONTRACT(check_index_put(out, index, src, dim, accumulate));
  if (index.numel() == 0) return;
  PutGeometry g{line_count(index.shape(), dim),
                index.size(dim),
                out.size(dim),
                out.stride(dim),
                index.stride(dim),
                src.stride(dim)};
  auto calc =
      line_offsets<3>(op, index.shape(), dim, {&out.strides(), &index.strides(), &src.strides()});
  DeviceErrorSlot error(out.device(), str(op, ": index "), range_message(dim, g.size));
  dispatch_dtype<DTypes::all, bf16>(out.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(index_put_kernel<T>, one_thread_per_item(op, g.lines, out),
           static_cast<T*>(out.data_ptr()), static_cast<const int64_t*>(index.data_ptr()),
           static_cast<const T*>(src.data_ptr()), calc, g, accumulate, error.data());
  });
}

}  // namespace

void register_index_kernels(KernelTable& k) {
  k.gather = run_gather;
  k.index_put = run_index_put;
}
}  // namespace rg::RG_BACKEND
