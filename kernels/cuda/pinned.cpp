// Pinned host memory and asynchronous copies of kernels/cuda/stream.h. empty_pinned draws
// from a caching pool: page-locked memory (cudaHostAlloc) when a GPU is present, ordinary
// aligned host memory otherwise. copy_async queues the copy on the current stream of the
// device side (cudaMemcpyAsync; on sim a memmove, queued in delayed-stream mode) and records
// that stream's use of the pinned block, so that a block freed while a copy may still read
// or write it returns to the pool only after an event recorded at the free has completed --
// without it, the next empty_pinned could hand the block out under an in-flight copy.
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/stream.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/stream_queue.h"
#if RG_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace rg::gpu {

namespace {

#if RG_WITH_CUDA
bool page_locked() {  // page-locked memory needs a GPU and its driver
  static const bool locked = device_available(DeviceType::cuda);
  return locked;
}
#endif

// The stream a block was used on travels with its device: type in bits 8+, index below.
int encode(Device d) { return static_cast<int>(d.type) << 8 | d.index; }
bool is_cuda_stream(int stream_device) {
  return (stream_device >> 8) == static_cast<int>(DeviceType::cuda);
}

// A pinned block is used by copies on sim or cuda streams: its events are of either kind.
struct PinnedEvent {
  bool cuda;
  void* event;
};

const RawMemory& event_hooks(bool cuda) {
  static const RawMemory sim_events = [] {
    RawMemory r;
    r.record_event = sim::record_queue_event;
    r.event_done = sim::queue_event_done;
    r.event_synchronize = sim::queue_event_synchronize;
    r.event_release = sim::queue_event_release;
    return r;
  }();
#if RG_WITH_CUDA
  static const RawMemory cuda_events = [] {
    RawMemory r;
    cuda::set_event_hooks(r);
    return r;
  }();
  if (cuda) return cuda_events;
#endif
  (void)cuda;
  return sim_events;
}
const RawMemory& hooks_of(void* e) { return event_hooks(static_cast<PinnedEvent*>(e)->cuda); }
void* event_of(void* e) { return static_cast<PinnedEvent*>(e)->event; }

void* record_event(void* stream, int stream_device) noexcept {
  const bool cuda = is_cuda_stream(stream_device);
  const RawMemory& hooks = event_hooks(cuda);
  void* event = hooks.record_event(stream, stream_device & 0xff);
  if (!event) return nullptr;
  try {
    return new PinnedEvent{cuda, event};
  } catch (...) {  // no memory for the wrapper: wait for the event now
    hooks.event_synchronize(event);
    hooks.event_release(event);
    return nullptr;
  }
}

RawMemory pinned_raw_memory() {
  RawMemory raw;
  raw.allocate = [](size_t n, int) -> void* {
#if RG_WITH_CUDA
    if (page_locked()) return cuda::pinned_allocate(n);
#endif
    return std::aligned_alloc(256, (n + 255) & ~size_t(255));
  };
  raw.release = [](void* p, int) {
#if RG_WITH_CUDA
    if (page_locked()) return cuda::pinned_release(p);
#endif
    std::free(p);
  };
  raw.total = [](int) { return size_t(1) << 40; };
  raw.record_event = record_event;
  raw.event_done = [](void* e) noexcept { return hooks_of(e).event_done(event_of(e)); };
  raw.event_synchronize = [](void* e) noexcept { hooks_of(e).event_synchronize(event_of(e)); };
  raw.event_release = [](void* e) noexcept {
    hooks_of(e).event_release(event_of(e));
    delete static_cast<PinnedEvent*>(e);
  };
  return raw;
}

CachingAllocator& pinned_pool() {
  static auto* pool = new CachingAllocator("pinned host memory", pinned_raw_memory(), 0);
  return *pool;  // never destroyed: pinned tensors may outlive main
}

void copy_now(void* dst, const void* src, size_t nbytes, bool dst_is_sim) {
  std::memmove(dst, src, nbytes);
  if (dst_is_sim) rg::sim::check::mark_written(dst, nbytes);
}

}  // namespace

Tensor empty_pinned(const Shape& shape, DType dtype) {
  size_t nbytes = numel_of(shape) * itemsize(dtype);
  void* p = pinned_pool().allocate(nbytes, nullptr);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(
      p, nbytes, kCPU, [](void* ptr, size_t) { pinned_pool().deallocate(ptr); });
  impl->storage->pinned = true;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

void copy_async(const Tensor& dst, const Tensor& src) {
  RG_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(), "copy_async: dst ",
           shape_str(dst.shape()), " ", dst.dtype(), " and src ", shape_str(src.shape()), " ",
           src.dtype(), " differ");
  RG_CHECK(dst.is_contiguous() && src.is_contiguous(), "copy_async: tensors must be contiguous");
  RG_CHECK(dst.device().is_cpu() != src.device().is_cpu(),
           "copy_async: one side must be on the host, got ", dst.device(), " and ", src.device());
  size_t nbytes = dst.nbytes();
  if (nbytes == 0) return;
  const Tensor& host = dst.device().is_cpu() ? dst : src;
  const Device gpu_side = dst.device().is_cpu() ? src.device() : dst.device();
  const Stream stream = current_stream(gpu_side);
#if RG_WITH_CUDA
  if (gpu_side.is_cuda()) {
    CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes, cudaMemcpyDefault,
                               static_cast<cudaStream_t>(stream.handle)));
  } else
#endif
  {
    RG_CHECK(gpu_side.is_sim(), "copy_async: unsupported device ", gpu_side);
    void* to = dst.data_ptr();
    const void* from = src.data_ptr();
    const bool to_sim = dst.device().is_sim();
    if (sim::is_delayed(stream.handle))
      sim::enqueue(stream.handle, [=] { copy_now(to, from, nbytes, to_sim); });
    else
      copy_now(to, from, nbytes, to_sim);
  }
  pinned_pool().record_stream(host.storage()->data, stream.handle, encode(gpu_side));  // if pinned
}

}  // namespace rg::gpu
