// What a device backend provides to the core: memory, copies and synchronisation.
// Core registers its own cpu device. The backends above core (sim, cuda, and every kernel
// table) are registered by the loader that the kernels layer installs
// (kernels/builtin.cpp), which core calls before each lookup; core itself names no layer
// above it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/device.h"
#include "core/memory_accounting.h"

namespace rg {

struct AllocatorStats {
  size_t allocated = 0;            // bytes handed out and not yet freed
  size_t reserved = 0;             // bytes held from the system (active + free cached)
  size_t peak_allocated = 0;       // high-water mark of `allocated`
  uint64_t system_allocs = 0;      // calls to the system allocator (malloc/cudaMalloc)
  MemoryCategoryStats categories;  // `allocated` split by what it holds, with phase peaks
  // The device allocators' blocks and segments (kernels/cuda/block_pool.h); 0 on the cpu.
  size_t active = 0;          // bytes of blocks in use or waiting for other streams (>= allocated)
  size_t inactive_split = 0;  // free bytes in segments that also hold other blocks
  size_t largest_free_block = 0;  // the largest request served without a new segment
  uint64_t segments = 0, splits = 0, merges = 0;
  size_t free_cached() const { return segments == 0 ? 0 : reserved - active; }
  // 1 - largest free block / free cached bytes: 0 when the free memory is one block (or there
  // is none), near 1 when it is scattered in pieces too small for a large request.
  double fragmentation() const {
    return free_cached() == 0 ? 0.0 : 1.0 - double(largest_free_block) / double(free_cached());
  }
};

struct DeviceInterface {
  void* (*allocate)(size_t nbytes, int index) = nullptr;
  void (*deallocate)(void* ptr, size_t nbytes, int index) = nullptr;
  // The bytes `allocate(nbytes)` adds to the stats' `allocated` (its rounded block size).
  size_t (*block_bytes)(size_t nbytes) = nullptr;
  // Copies between this device and the host, or within this device. Ordered with the
  // device's compute stream; returns once the data is at dst (synchronous semantics).
  void (*copy)(void* dst, Device dst_device, const void* src, Device src_device,
               size_t nbytes) = nullptr;
  void (*synchronize)(int index) = nullptr;
  AllocatorStats (*stats)(int index) = nullptr;
  void (*empty_cache)(int index) = nullptr;
  int (*device_count)() = nullptr;
  // Why device_count() is 0 (the driver's own words), for the error that says so.
  const char* (*why_no_device)() = nullptr;
};

// Sets the backend of `type`; the built-in registration calls it for cpu, sim and cuda.
void register_device(DeviceType type, const DeviceInterface& interface);
// Installs the function that registers the backends above core. It must be idempotent and
// thread-safe: every lookup calls it. Until one is installed, only the cpu device exists.
void set_backend_loader(void (*loader)());
// Registers the cpu device (once) and runs the installed loader; every lookup calls it.
void load_backends();
// Throws rg::Error when the backend is not built or has no device, saying which.
const DeviceInterface& device_interface(DeviceType type);
bool device_available(DeviceType type);

// The allocator's counters and, in `categories`, the same bytes by what they hold.
AllocatorStats memory_stats(Device device);
void empty_cache(Device device);
void synchronize(Device device);

}  // namespace rg
