// The sim device: device memory is host memory served by the same caching allocator as
// cuda (device_memory.cpp underneath: aligned malloc, capped by RG_SIM_DEVICE_MEMORY), copies
// are memcpy, and streams run in order on the calling thread, so synchronize has nothing to
// wait for -- except in delayed-stream mode (stream_queue.h), where a synchronous copy first
// runs what its stream has queued. Registered by register_builtin_backends (kernels/builtin.h).
#include "kernels/sim/device.h"

#include <cstring>
#include <functional>
#include <memory>
#include <mutex>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/capture_checked_device.h"
#include "kernels/cuda/device_errors.h"
#include "kernels/cuda/stream.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/sticky_error.h"
#include "kernels/sim/stream_queue.h"

namespace rg::sim {

namespace {

gpu::RawMemory raw_host_memory() {
  gpu::RawMemory raw;
  raw.allocate = raw_allocate;
  raw.release = raw_release;
  raw.total = total_memory;
  raw.record_event = record_queue_event;
  raw.event_done = queue_event_done;
  raw.event_synchronize = queue_event_synchronize;
  raw.event_release = queue_event_release;
  raw.whole_blocks = check::instrumented();
  return raw;
}

constexpr int kMaxSimDevices = 16;

// Under sim-check, a graph's kernels run only when it is replayed, long after the capture
// allocated and freed their blocks (and handed a freed block out again to another tensor).
// So the capture also records each block's allocation and free of the graph's pool, and
// every replay tells sim-check of them in order with the kernels: each kernel is checked
// against the blocks as they were at its place in the captured work.
void record_in_capture(void* stream, std::function<void()> event) {
  if (check::instrumented() && stream && stream == capturing_stream())
    enqueue(stream, std::move(event));
}

}  // namespace

// Called once by register_builtin_backends (kernels/builtin.h).
void register_sim_device() {
  DeviceInterface d;
  d.allocate = [](size_t n, int index) {
    void* stream = gpu::current_stream(Device(DeviceType::sim, index)).handle;
    void* p = allocator(index).allocate(n, stream);
    check::on_alloc(p, n);
    record_in_capture(stream, [p, n] { check::on_alloc(p, n); });
    return p;
  };
  d.deallocate = [](void* p, size_t, int index) {
    check::on_free(p);
    if (check::instrumented() && capturing_stream() && allocator(index).in_graph_pool(p))
      record_in_capture(capturing_stream(), [p] { check::on_free(p); });
    allocator(index).deallocate(p);
  };
  d.block_bytes = gpu::CachingAllocator::size_class;
  d.copy = [](void* dst, Device dst_device, const void* src, Device src_device, size_t n) {
    Device side = dst_device.is_sim() ? dst_device : src_device;
    check_sticky_error(side.index, "cudaMemcpy");
    if (sim::delayed_streams()) drain(gpu::current_stream(side).handle);
    if (n) std::memmove(dst, src, n);
    check::mark_written(dst, n);
    gpu::count_host_sync(side);
    if (dst_device.is_cpu()) gpu::check_device_errors(side);
  };
  d.synchronize = [](int index) {
    check_sticky_error(index, "cudaDeviceSynchronize");
    drain_all();
    gpu::count_host_sync(Device(DeviceType::sim, index));
    gpu::check_device_errors(Device(DeviceType::sim, index));
  };
  d.stats = [](int index) { return allocator(index).stats(); };
  d.empty_cache = [](int index) { allocator(index).empty_cache(); };
  d.device_count = [] { return kMaxSimDevices; };
  gpu::register_gpu_device(DeviceType::sim, d);  // with the capture checks
}

gpu::CachingAllocator& allocator(int index) {
  RG_CHECK(index >= 0 && index < kMaxSimDevices, "sim: device index ", index, " out of range [0, ",
           kMaxSimDevices, ")");
  static std::unique_ptr<gpu::CachingAllocator>* slots =
      new std::unique_ptr<gpu::CachingAllocator>[kMaxSimDevices];
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (!slots[index])
    slots[index] =
        std::make_unique<gpu::CachingAllocator>(str("sim:", index), raw_host_memory(), index);
  return *slots[index];
}

}  // namespace rg::sim
