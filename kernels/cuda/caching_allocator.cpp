// See caching_allocator.h.
#include "kernels/cuda/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "kernels/cuda/capture_rules.h"

namespace rg::gpu {

namespace {
std::string mib(size_t bytes) { return str(bytes / (1024.0 * 1024.0), " MiB"); }
}  // namespace

CachingAllocator::CachingAllocator(std::string device_name, RawMemory raw, int device)
    : name_(std::move(device_name)), raw_(raw), device_(device) {}

void* CachingAllocator::allocate(size_t nbytes, void* stream) {
  const size_t size = BlockPool::round_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t pool = pool_for_locked(stream);
  const FreeListKey key{pool, stream, BlockPool::is_small(size)};
  // Filling a graph's pool the stream captures: no event query (CUDA forbids it then, and
  // would invalidate the capture); the pending blocks wait for an allocation after it.
  if (!pending_.empty() && pool == 0) return_finished_locked(false);
  const bool split = !raw_.whole_blocks;
  Block* block = pool_.take(key, size, split);
  if (!block) {
    const size_t bytes = split ? BlockPool::segment_size(size) : size;
    void* segment = allocate_segment_locked(bytes, nbytes, pool);
    try {
      pool_.add_segment(key, segment, bytes);
    } catch (...) {  // no memory for the bookkeeping
      raw_.release(segment, device_);
      throw;
    }
    block = pool_.take(key, size, split);  // the new segment: nothing else fitted
  }
  try {
    live_.emplace(block->ptr, block);
  } catch (...) {  // no memory for the bookkeeping: keep the block cached
    pool_.give_back(block);
    throw;
  }
  block->requested = size;
  active_ += block->size;
  stats_.allocated += size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return block->ptr;
}

// Raw memory for a new segment of `bytes`. Short of room (the device's, or the cap's), it
// gives the whole free segments back and tries again, then waits for the pending blocks'
// events (they may free whole segments) and tries once more. Filling a graph pool it
// neither frees nor waits: it fails at once. And it allocates in relaxed capture mode, as
// PyTorch does: in the capture's own (thread-local) mode CUDA forbids cudaMalloc and
// invalidates the capture, but memory the graph keeps until it dies is safe to take.
void* CachingAllocator::allocate_segment_locked(size_t bytes, size_t nbytes, uint64_t pool) {
  for (int attempt = 0;; ++attempt) {
    const bool within_cap = !cap_ || pool_.stats().reserved + bytes <= cap_;
    void* p = nullptr;
    if (within_cap && pool != 0) {
      CaptureModeGuard relaxed(CaptureMode::relaxed);
      p = raw_.allocate(bytes, device_);
    } else if (within_cap) {
      p = raw_.allocate(bytes, device_);
    }
    if (p) {
      stats_.system_allocs++;
      return p;
    }
    if (pool != 0) {
      fail_oom(nbytes, bytes,
               within_cap ? "the device's free memory (while capturing a graph)"
                          : "the memory cap (while capturing a graph)");
    } else if (attempt == 0) {
      pool_.release_free_segments(raw_, device_);
    } else if (attempt == 1 && !pending_.empty()) {
      return_finished_locked(true);
      pool_.release_free_segments(raw_, device_);
    } else {
      fail_oom(nbytes, bytes, within_cap ? "the device's free memory" : "the memory cap");
    }
  }
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    std::fprintf(stderr, "%s allocator: free of an unknown pointer %p\n", name_.c_str(), ptr);
    std::abort();
  }
  Block* block = it->second;
  live_.erase(it);
  stats_.allocated -= block->requested;
  if (block->uses == 0) return return_block_locked(block);
  Pending pending{block, {}};
  for (int u = 0; u < block->uses; ++u)
    pending.events[u] = raw_.record_event(block->use[u].stream, block->use[u].device);
  pending_.push_back(pending);  // within the capacity reserved by record_stream
  --blocks_with_uses_;
}

void CachingAllocator::return_block_locked(Block* block) noexcept {
  active_ -= block->size;
  pool_.give_back(block);
}

void CachingAllocator::return_finished_locked(bool wait) {
  size_t kept = 0;
  for (Pending& p : pending_) {
    bool done = true;
    for (int u = 0; u < p.block->uses; ++u) {
      if (!p.events[u]) continue;
      if (wait) raw_.event_synchronize(p.events[u]);
      if (!raw_.event_done(p.events[u])) {
        done = false;
        continue;
      }
      raw_.event_release(p.events[u]);
      p.events[u] = nullptr;
    }
    if (done)
      return_block_locked(p.block);
    else
      pending_[kept++] = p;
  }
  pending_.resize(kept);
}

bool CachingAllocator::record_stream(void* ptr, void* stream, int stream_device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  RG_CHECK(raw_.record_event, name_, " allocator: record_stream is not supported");
  Block& block = *it->second;
  if (stream == block.stream) return true;
  for (int u = 0; u < block.uses; ++u)
    if (block.use[u].stream == stream && block.use[u].device == stream_device) return true;
  RG_CHECK(block.uses < kMaxUses, name_, " allocator: record_stream: a block used on more than ",
           kMaxUses, " other streams");
  if (block.uses == 0) {  // reserve the slot its free will take in pending_
    size_t needed = pending_.size() + blocks_with_uses_ + 1;
    if (pending_.capacity() < needed) pending_.reserve(std::max(needed, 2 * pending_.capacity()));
    ++blocks_with_uses_;
  }
  block.use[block.uses++] = StreamUse{stream, stream_device};
  return true;
}

AllocatorStats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  const BlockPoolStats pool = pool_.stats();
  AllocatorStats s = stats_;
  s.reserved = pool.reserved;
  s.active = active_;
  s.inactive_split = pool.inactive_split;
  s.largest_free_block = pool.largest_free;
  s.segments = pool.segments;
  s.splits = pool.splits;
  s.merges = pool.merges;
  return s;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  return_finished_locked(false);
  pool_.release_free_segments(raw_, device_);
}

uint64_t CachingAllocator::pool_for_locked(void* stream) const {
  for (const auto& [s, pool] : pool_of_stream_)
    if (s == stream) return pool;
  return 0;
}

void CachingAllocator::begin_pool(void* stream, uint64_t pool) {
  RG_CHECK(pool != 0, name_, " allocator: graph pool ids start at 1");
  std::lock_guard<std::mutex> lock(mutex_);
  RG_CHECK(pool_for_locked(stream) == 0, name_, " allocator: stream ", stream,
           " already allocates from graph pool ", pool_for_locked(stream));
  pool_of_stream_.emplace_back(stream, pool);
}

void CachingAllocator::end_pool(void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(pool_of_stream_, [stream](const auto& entry) { return entry.first == stream; });
}

void CachingAllocator::release_pool(uint64_t pool) {
  if (pool == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  pool_.release_free_segments(raw_, device_, pool);
  pool_.move_pool(pool, 0);
}

bool CachingAllocator::in_graph_pool(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  return it != live_.end() && it->second->pool != 0;
}

size_t CachingAllocator::pool_reserved(uint64_t pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  return pool_.pool_reserved(pool);
}

void CachingAllocator::set_memory_fraction(double fraction) {
  RG_CHECK(fraction > 0 && fraction <= 1, name_, ": memory fraction must be in (0, 1], got ",
           fraction);
  std::lock_guard<std::mutex> lock(mutex_);
  fraction_ = fraction;
  cap_ = static_cast<size_t>(fraction * static_cast<double>(raw_.total(device_)));
}

void CachingAllocator::fail_oom(size_t nbytes, size_t bytes, const char* why) {
  const BlockPoolStats pool = pool_.stats();
  RG_FAIL(name_, " out of memory: tried to allocate ", nbytes, " bytes (a ", mib(bytes),
          " segment), which exceeds ", why, ". Allocated ", mib(stats_.allocated), ", reserved ",
          mib(pool.reserved), " (", mib(pool.free), " free, the largest free block ",
          mib(pool.largest_free), "), peak ", mib(stats_.peak_allocated),
          cap_ ? str(", cap ", mib(cap_), " (fraction ", fraction_, " of ",
                     mib(raw_.total(device_)), ")")
               : str(", device total ", mib(raw_.total(device_))));
}

}  // namespace rg::gpu
