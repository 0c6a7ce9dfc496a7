// Pinned host memory and asynchronous copies of kernels/cuda/stream.h. With CUDA and a GPU,
// empty_pinned draws page-locked memory from a cached pool (cudaHostAlloc underneath) and
// copy_async is a cudaMemcpyAsync on the current stream of the gpu side. On sim (or without
// a GPU) pinned memory is ordinary host memory and copies are immediate.
#include <cstring>

#include "kernels/cuda/stream.h"
#include "kernels/sim/check/check.h"
#if RG_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace rg::gpu {

Tensor empty_pinned(const Shape& shape, DType dtype) {
#if RG_WITH_CUDA
  if (device_available(DeviceType::cuda)) {
    size_t nbytes = numel_of(shape) * itemsize(dtype);
    void* p = cuda::pinned_allocate(nbytes);
    auto impl = std::make_shared<TensorImpl>();
    impl->storage = std::make_shared<Storage>(p, nbytes, kCPU,
                                              [](void* ptr, size_t) { cuda::pinned_release(ptr); });
    impl->shape = shape;
    impl->strides = contiguous_strides(shape);
    impl->dtype = dtype;
    return Tensor(std::move(impl));
  }
#endif
  return empty(shape, dtype, kCPU);
}

void copy_async(const Tensor& dst, const Tensor& src) {
  RG_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(), "copy_async: dst ",
           shape_str(dst.shape()), " ", dst.dtype(), " and src ", shape_str(src.shape()), " ",
           src.dtype(), " differ");
  RG_CHECK(dst.is_contiguous() && src.is_contiguous(), "copy_async: tensors must be contiguous");
  size_t nbytes = dst.nbytes();
  if (nbytes == 0) return;
#if RG_WITH_CUDA
  if (dst.device().is_cuda() || src.device().is_cuda()) {
    Device gpu_side = dst.device().is_cuda() ? dst.device() : src.device();
    auto stream = static_cast<cudaStream_t>(current_stream(gpu_side).handle);
    CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes, cudaMemcpyDefault, stream));
    return;
  }
#endif
  RG_CHECK(dst.device().is_host_memory() && src.device().is_host_memory(),
           "copy_async: unsupported devices ", dst.device(), " and ", src.device());
  std::memmove(dst.data_ptr(), src.data_ptr(), nbytes);
  if (dst.device().is_sim()) rg::sim::check::mark_written(dst.data_ptr(), nbytes);
}

}  // namespace rg::gpu
