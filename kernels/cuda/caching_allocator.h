// Caching allocator for device memory, shared by the cuda device (cudaMalloc underneath)
// and the sim device (aligned host malloc underneath), so sim exercises the same logic.
// Freed blocks are kept in per-stream free lists keyed by a rounded size class and handed
// out again without touching the system allocator; a block freed on one stream is reused
// only by allocations on that stream (work queued there is ordered before the reuse).
// A cap (a fraction of device memory) turns into a clear out-of-memory rg::Error.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/device_interface.h"

namespace rg::gpu {

struct RawMemory {
  void* (*allocate)(size_t nbytes, int device) = nullptr;  // null when out of memory
  void (*release)(void* ptr, int device) = nullptr;
  size_t (*total)(int device) = nullptr;  // bytes of device memory
};

class CachingAllocator {
 public:
  CachingAllocator(std::string device_name, RawMemory raw, int device);
  ~CachingAllocator() = default;  // never destroyed in practice: tensors may outlive main

  void* allocate(size_t nbytes, void* stream);
  // Never allocates or throws: it runs in Storage's destructor, also while an out-of-memory
  // error unwinds. allocate() reserves the free-list slot each live block returns to.
  void deallocate(void* ptr) noexcept;
  AllocatorStats stats();
  void empty_cache();
  void set_memory_fraction(double fraction);  // (0, 1]

  static size_t size_class(size_t nbytes);

 private:
  struct Block {
    size_t size;
    void* stream;
  };
  struct Bucket {               // the blocks of one (stream, class)
    std::vector<void*> cached;  // capacity >= cached.size() + live, so a free never grows it
    size_t live = 0;
  };
  void release_cached_locked();
  [[noreturn]] void fail_oom(size_t nbytes, size_t cls, const char* why);

  std::string name_;
  RawMemory raw_;
  int device_;
  std::mutex mutex_;
  std::map<std::pair<void*, size_t>, Bucket> buckets_;  // (stream, class) -> blocks
  std::unordered_map<void*, Block> live_;
  AllocatorStats stats_;
  size_t cap_ = 0;  // 0: no cap
  double fraction_ = 1.0;
};

}  // namespace rg::gpu
