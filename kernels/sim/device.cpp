// The sim device: device memory is host memory served by the same caching allocator as
// cuda (aligned malloc underneath), copies are memcpy, and streams run in order on the
// calling thread, so synchronize has nothing to wait for. Registered by
// register_builtin_backends (kernels/builtin.h).
#include "kernels/sim/device.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/stream.h"

namespace rg::sim {

namespace {

size_t host_memory(int) {
  return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

gpu::RawMemory raw_host_memory() {
  gpu::RawMemory raw;
  raw.allocate = [](size_t n, int) { return std::aligned_alloc(256, (n + 255) & ~size_t(255)); };
  raw.release = [](void* p, int) { std::free(p); };
  raw.total = host_memory;
  return raw;
}

constexpr int kMaxSimDevices = 16;

}  // namespace

// Called once by register_builtin_backends (kernels/builtin.h).
void register_sim_device() {
  DeviceInterface d;
  d.allocate = [](size_t n, int index) {
    return allocator(index).allocate(n, gpu::current_stream(Device(DeviceType::sim, index)).handle);
  };
  d.deallocate = [](void* p, size_t, int index) { allocator(index).deallocate(p); };
  d.copy = [](void* dst, Device, const void* src, Device, size_t n) {
    if (n) std::memmove(dst, src, n);
  };
  d.synchronize = [](int) {};
  d.stats = [](int index) { return allocator(index).stats(); };
  d.empty_cache = [](int index) { allocator(index).empty_cache(); };
  d.device_count = [] { return kMaxSimDevices; };
  register_device(DeviceType::sim, d);
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

size_t total_memory(int index) { return host_memory(index); }

}  // namespace rg::sim
