// See caching_allocator.h.
#include "kernels/cuda/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace rg::gpu {

namespace {
std::string mib(size_t bytes) { return str(bytes / (1024.0 * 1024.0), " MiB"); }
}  // namespace

CachingAllocator::CachingAllocator(std::string device_name, RawMemory raw, int device)
    : name_(std::move(device_name)), raw_(raw), device_(device) {}

// 512-byte granules up to 1 MiB, then a 3-bit mantissa (at most 12.5% waste) so that
// nearby sizes share a class.
size_t CachingAllocator::size_class(size_t n) {
  n = n == 0 ? 1 : n;
  if (n <= (size_t(1) << 20)) return (n + 511) & ~size_t(511);
  int msb = 63 - __builtin_clzll(n);
  size_t step = size_t(1) << (msb - 3);
  return (n + step - 1) & ~(step - 1);
}

void* CachingAllocator::allocate(size_t nbytes, void* stream) {
  size_t cls = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_.empty()) return_finished_locked(false);
  const uint64_t pool = pool_for_locked(stream);
  Bucket& bucket = buckets_[{pool, stream, cls}];
  void* p = nullptr;
  if (!bucket.cached.empty()) {
    p = bucket.cached.back();
    bucket.cached.pop_back();
  } else {
    // Room for this block's return, before there is a block to lose if this throws.
    size_t needed = bucket.cached.size() + bucket.live + 1;
    if (bucket.cached.capacity() < needed)
      bucket.cached.reserve(std::max(needed, 2 * bucket.cached.capacity()));
    if (cap_ && stats_.reserved + cls > cap_ && !pool) {  // no waiting while capturing
      return_finished_locked(true);
      release_cached_locked();
    }
    if (cap_ && stats_.reserved + cls > cap_) fail_oom(nbytes, cls, "the memory cap");
    p = raw_.allocate(cls, device_);
    if (!p && pool) fail_oom(nbytes, cls, "the device's free memory (while capturing a graph)");
    if (!p) {  // the device is full: give back what we cache and retry once
      return_finished_locked(true);
      release_cached_locked();
      p = raw_.allocate(cls, device_);
      if (!p) fail_oom(nbytes, cls, "the device's free memory");
    }
    stats_.reserved += cls;
    stats_.system_allocs++;
  }
  try {
    live_.emplace(p, Block{cls, stream, pool});
  } catch (...) {  // no memory for the bookkeeping: keep the block cached
    bucket.cached.push_back(p);
    throw;
  }
  bucket.live++;
  stats_.allocated += cls;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return p;
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    std::fprintf(stderr, "%s allocator: free of an unknown pointer %p\n", name_.c_str(), ptr);
    std::abort();
  }
  const Block block = it->second;
  live_.erase(it);
  if (block.uses == 0) return return_block_locked(ptr, block);
  Pending pending{ptr, block, {}};
  for (int u = 0; u < block.uses; ++u)
    pending.events[u] = raw_.record_event(block.use[u].stream, block.use[u].device);
  pending_.push_back(pending);  // within the capacity reserved by record_stream
  --blocks_with_uses_;
}

void CachingAllocator::return_block_locked(void* ptr, const Block& block) {
  Bucket& bucket = buckets_.find({block.pool, block.stream, block.size})->second;
  bucket.cached.push_back(ptr);  // within the capacity reserved by allocate
  bucket.live--;
  stats_.allocated -= block.size;
}

void CachingAllocator::return_finished_locked(bool wait) {
  size_t kept = 0;
  for (Pending& p : pending_) {
    bool done = true;
    for (int u = 0; u < p.block.uses; ++u) {
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
      return_block_locked(p.ptr, p.block);
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
  Block& block = it->second;
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
  block.use[block.uses++] = Use{stream, stream_device};
  return true;
}

AllocatorStats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  return_finished_locked(false);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (auto& [key, bucket] : buckets_) {  // buckets stay: allocate() may hold one
    if (std::get<0>(key) != 0) continue;  // a graph's pool: its replays use these blocks
    for (void* p : bucket.cached) raw_.release(p, device_);
    stats_.reserved -= std::get<2>(key) * bucket.cached.size();
    bucket.cached.clear();
  }
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

// Cached blocks go back to the system; each live block's bucket moves to pool 0, where its
// free will put it (capacity reserved first, as allocate() does).
void CachingAllocator::release_pool(uint64_t pool) {
  if (pool == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto to_general = [&](Block& block) {
    if (block.pool != pool) return;
    Bucket& general = buckets_[{0, block.stream, block.size}];
    if (general.cached.capacity() < general.cached.size() + general.live + 1)
      general.cached.reserve(2 * (general.cached.size() + general.live + 1));
    general.live++;
    buckets_.find({pool, block.stream, block.size})->second.live--;
    block.pool = 0;
  };
  for (auto& entry : live_) to_general(entry.second);
  for (Pending& p : pending_) to_general(p.block);  // freed, awaiting other streams' events
  for (auto& [key, bucket] : buckets_) {
    if (std::get<0>(key) != pool) continue;
    for (void* p : bucket.cached) raw_.release(p, device_);
    stats_.reserved -= std::get<2>(key) * bucket.cached.size();
    bucket.cached.clear();
  }
  std::erase_if(buckets_, [pool](const auto& entry) { return std::get<0>(entry.first) == pool; });
}

size_t CachingAllocator::pool_reserved(uint64_t pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t bytes = 0;
  for (const auto& [key, bucket] : buckets_)
    if (std::get<0>(key) == pool) bytes += std::get<2>(key) * (bucket.cached.size() + bucket.live);
  return bytes;
}

void CachingAllocator::set_memory_fraction(double fraction) {
  RG_CHECK(fraction > 0 && fraction <= 1, name_, ": memory fraction must be in (0, 1], got ",
           fraction);
  std::lock_guard<std::mutex> lock(mutex_);
  fraction_ = fraction;
  cap_ = static_cast<size_t>(fraction * static_cast<double>(raw_.total(device_)));
}

void CachingAllocator::fail_oom(size_t nbytes, size_t cls, const char* why) {
  RG_FAIL(name_, " out of memory: tried to allocate ", nbytes, " bytes (", mib(cls),
          " block), which exceeds ", why, ". Allocated ", mib(stats_.allocated), ", reserved ",
          mib(stats_.reserved), ", peak ", mib(stats_.peak_allocated),
          cap_ ? str(", cap ", mib(cap_), " (fraction ", fraction_, " of ",
                     mib(raw_.total(device_)), ")")
               : str(", device total ", mib(raw_.total(device_))));
}

}  // namespace rg::gpu
