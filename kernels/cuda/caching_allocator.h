// Caching allocator for device memory, shared by the cuda device (cudaMalloc underneath)
// and the sim device (aligned host malloc underneath), so sim exercises the same logic.
// Freed blocks are kept in per-stream free lists keyed by a rounded size class and handed
// out again without touching the system allocator; a block freed on one stream is reused
// only by allocations on that stream (work queued there is ordered before the reuse).
// A block also used on other streams (record_stream, as PyTorch's) returns to its free list
// only once an event recorded on each of them at the free has completed: until then those
// streams may still read or write it.
// A cap (a fraction of device memory) turns into a clear out-of-memory rg::Error.
// Graph pools (kernels/cuda/graph.h): while a stream captures a graph, its allocations come
// from the graph's pool, a free list of its own (the pool id is part of the free-list key);
// its blocks, freed during the capture or later, go back to that pool only, and neither
// empty_cache nor the memory cap releases them, until release_pool when the graph dies.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/device_interface.h"

namespace rg::gpu {

struct RawMemory {
  void* (*allocate)(size_t nbytes, int device) = nullptr;  // null when out of memory
  void (*release)(void* ptr, int device) = nullptr;
  size_t (*total)(int device) = nullptr;  // bytes of device memory
  // Events for record_stream. `stream_device` is the argument record_stream got. An event
  // is null when the stream's work so far is already complete.
  void* (*record_event)(void* stream, int stream_device) noexcept = nullptr;
  bool (*event_done)(void* event) noexcept = nullptr;
  void (*event_synchronize)(void* event) noexcept = nullptr;
  void (*event_release)(void* event) noexcept = nullptr;
};

class CachingAllocator {
 public:
  CachingAllocator(std::string device_name, RawMemory raw, int device);
  ~CachingAllocator() = default;  // never destroyed in practice: tensors may outlive main

  void* allocate(size_t nbytes, void* stream);
  // Never allocates or throws: it runs in Storage's destructor, also while an out-of-memory
  // error unwinds. allocate() reserves the free-list slot each live block returns to.
  void deallocate(void* ptr) noexcept;
  // Marks the block at `ptr` (an allocate() result) as used by work on `stream`, so that
  // freeing it waits for that work. False (nothing recorded) if `ptr` is not a live block
  // of this allocator.
  bool record_stream(void* ptr, void* stream, int stream_device);
  AllocatorStats stats();
  void empty_cache();
  void set_memory_fraction(double fraction);  // (0, 1]

  static size_t size_class(size_t nbytes);

  // Allocations on `stream` come from graph pool `pool` (an id > 0) until end_pool(stream).
  void begin_pool(void* stream, uint64_t pool);
  void end_pool(void* stream);
  // Gives the pool's cached blocks back to the system; its live blocks join the general free
  // lists when freed. The pool's graph must be done with them (no replay in flight).
  void release_pool(uint64_t pool);
  size_t pool_reserved(uint64_t pool);  // bytes of the pool's blocks, cached or live

 private:
  static constexpr int kMaxUses = 4;  // streams besides the block's own
  struct Use {
    void* stream;
    int device;
  };
  struct Block {
    size_t size;
    void* stream;
    uint64_t pool = 0;  // 0: the general free lists
    int uses = 0;
    std::array<Use, kMaxUses> use{};
  };
  struct Pending {  // freed, waiting for the events of its other streams
    void* ptr;
    Block block;
    std::array<void*, kMaxUses> events{};
  };
  struct Bucket {               // the blocks of one (stream, class)
    std::vector<void*> cached;  // capacity >= cached.size() + live, so a free never grows it
    size_t live = 0;
  };
  void release_cached_locked();
  void return_block_locked(void* ptr, const Block& block);
  void return_finished_locked(bool wait);  // pending blocks whose events are done
  [[noreturn]] void fail_oom(size_t nbytes, size_t cls, const char* why);

  std::string name_;
  RawMemory raw_;
  int device_;
  std::mutex mutex_;
  using BucketKey = std::tuple<uint64_t, void*, size_t>;  // (pool, stream, class)
  uint64_t pool_for_locked(void* stream) const;
  std::map<BucketKey, Bucket> buckets_;                     // (pool, stream, class) -> blocks
  std::vector<std::pair<void*, uint64_t>> pool_of_stream_;  // streams capturing into a pool
  std::unordered_map<void*, Block> live_;
  std::vector<Pending> pending_;  // capacity >= size + live blocks with uses (no growth)
  size_t blocks_with_uses_ = 0;
  AllocatorStats stats_;
  size_t cap_ = 0;  // 0: no cap
  double fraction_ = 1.0;
};

}  // namespace rg::gpu
