// Caching allocator for device memory, shared by the cuda device (cudaMalloc underneath)
// and the sim device (aligned host malloc underneath), so sim exercises the same logic.
// Raw allocations (segments) are carved into blocks, split and merged by BlockPool
// (block_pool.h), with a free list per stream and pool (small, large): a block freed on one
// stream is reused only by allocations on that stream (work queued there is ordered before
// the reuse), without touching the system allocator.
// A block also used on other streams (record_stream, as PyTorch's) returns to its free list
// only once an event recorded on each of them at the free has completed: until then those
// streams may still read or write it.
// When the device (or the cap, a fraction of device memory) has no room for a new segment,
// the whole free segments are given back and the allocation tried again, then once more
// after waiting for the pending blocks' events; then a clear out-of-memory rg::Error.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/device_interface.h"
#include "kernels/cuda/block_pool.h"

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
  // Each block its own segment, never split: sim-check watches each raw allocation as one
  // allocation with red zones around it (kernels/sim/check), so blocks sharing a segment
  // would hide an overrun into a neighbour and share one live flag.
  bool whole_blocks = false;
};

class CachingAllocator {
 public:
  CachingAllocator(std::string device_name, RawMemory raw, int device);
  ~CachingAllocator() = default;  // never destroyed in practice: tensors may outlive main

  void* allocate(size_t nbytes, void* stream);
  // Never allocates or throws: it runs in Storage's destructor, also while an out-of-memory
  // error unwinds. Each block keeps what its return needs (block_pool.h).
  void deallocate(void* ptr) noexcept;
  // Marks the block at `ptr` (an allocate() result) as used by work on `stream`, so that
  // freeing it waits for that work. False (nothing recorded) if `ptr` is not a live block
  // of this allocator.
  bool record_stream(void* ptr, void* stream, int stream_device);
  AllocatorStats stats();
  void empty_cache();                         // gives the whole free segments back
  void set_memory_fraction(double fraction);  // (0, 1]

  // The bytes allocate(nbytes) counts in `allocated`: nbytes rounded up to 512.
  static size_t size_class(size_t nbytes) { return BlockPool::round_size(nbytes); }

  // Graph pools (kernels/cuda/graph.h). Allocations on `stream` come from graph pool `pool`
  // (an id > 0) until end_pool(stream): segments of its own, whose blocks go back to that
  // pool only; empty_cache and the out-of-memory retries leave them alone, and while a pool
  // is filled nothing waits or frees (a capturing stream must not synchronize).
  void begin_pool(void* stream, uint64_t pool);
  void end_pool(void* stream);
  // When the pool's graph is gone: its whole free segments go back to the system and the
  // rest (blocks still in use included) join the general pool. No replay may be in flight.
  void release_pool(uint64_t pool);
  size_t pool_reserved(uint64_t pool);  // bytes of the pool's segments
  bool in_graph_pool(void* ptr);        // `ptr` is a live block of a graph's pool

 private:
  struct Pending {  // freed, waiting for the events of its other streams
    Block* block;
    std::array<void*, kMaxUses> events{};
  };
  void* allocate_segment_locked(size_t bytes, size_t nbytes, uint64_t pool);
  uint64_t pool_for_locked(void* stream) const;
  void return_block_locked(Block* block) noexcept;
  void return_finished_locked(bool wait);  // pending blocks whose events are done
  [[noreturn]] void fail_oom(size_t nbytes, size_t bytes, const char* why);

  std::string name_;
  RawMemory raw_;
  int device_;
  std::mutex mutex_;
  BlockPool pool_;
  std::unordered_map<void*, Block*> live_;
  std::vector<std::pair<void*, uint64_t>> pool_of_stream_;  // streams filling a graph pool
  std::vector<Pending> pending_;  // capacity >= size + live blocks with uses (no growth)
  size_t blocks_with_uses_ = 0;
  size_t active_ = 0;     // bytes of blocks in use or pending
  AllocatorStats stats_;  // allocated, peak_allocated, system_allocs
  size_t cap_ = 0;        // 0: no cap
  double fraction_ = 1.0;
};

}  // namespace rg::gpu
