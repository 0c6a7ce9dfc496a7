// Storage: one reference-counted block of device memory shared by a tensor and its views.
// The version counter lives here so that every view of the memory sees in-place writes
// (autograd uses it to detect tensors modified after being saved for backward).
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "core/device.h"
#include "core/memory_category.h"

namespace rg {

struct Storage;
void account_release(const Storage& storage) noexcept;  // core/memory_accounting.h

struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  std::function<void(void*, size_t)> release;  // empty for borrowed memory
  std::atomic<uint64_t> version{0};
  // The memory report's view (core/memory_accounting.h): bytes the allocator charged for
  // this block (0 for borrowed memory) and what the block holds. Guarded by its mutex.
  size_t charged_bytes = 0;
  MemoryCategory memory_category = MemoryCategory::other;
  // Page-locked host memory of the pinned pool (gpu::empty_pinned): copies from it to a GPU
  // may be asynchronous (Tensor::to's non_blocking).
  bool pinned = false;

  Storage(void* d, size_t n, Device dev, std::function<void(void*, size_t)> r)
      : data(d), nbytes(n), device(dev), release(std::move(r)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (charged_bytes) account_release(*this);
    if (release) release(data, nbytes);
  }
};

// Allocates through the device's registered allocator (see core/device_interface.h).
std::shared_ptr<Storage> allocate_storage(size_t nbytes, Device device);
// Wraps memory owned by someone else; it must outlive every tensor that views it.
std::shared_ptr<Storage> borrow_storage(void* data, size_t nbytes, Device device);

}  // namespace rg
