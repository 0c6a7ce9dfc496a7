// sim-check: the registry of sim device memory. Every raw block of the sim allocator is a
// Region with red zones on both sides; the allocation handed out in it has a requested size
// and is live until freed. The hooks look an address up here (with a one-entry cache).
#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "kernels/sim/check/state.h"

namespace rg::sim::check {

namespace {

std::atomic<bool> g_instrumented{false};

struct Registry {
  std::shared_mutex mutex;
  std::map<uintptr_t, std::unique_ptr<Region>> by_base;  // shadow.base -> region
  std::atomic<uint64_t> generation{0};                   // bumped when a region goes away
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: tensors may outlive main
  return *r;
}

struct RegionCache {
  Region* region = nullptr;
  uint64_t generation = ~uint64_t(0);
};
thread_local RegionCache t_cache;

Region* lookup_locked(Registry& r, uintptr_t a) {
  auto it = r.by_base.upper_bound(a);
  if (it == r.by_base.begin()) return nullptr;
  --it;
  return it->second->shadow.contains(a) ? it->second.get() : nullptr;
}

}  // namespace

bool instrumented() { return g_instrumented.load(std::memory_order_relaxed); }

Region* find_region(uintptr_t a) {
  Registry& r = registry();
  uint64_t gen = r.generation.load(std::memory_order_acquire);
  if (t_cache.region && t_cache.generation == gen && t_cache.region->shadow.contains(a))
    return t_cache.region;
  std::shared_lock lock(r.mutex);
  Region* found = lookup_locked(r, a);
  if (found) t_cache = {found, gen};
  return found;
}

void on_raw_alloc(void* user, size_t bytes) {
  if (!instrumented()) return;
  auto region = std::make_unique<Region>();
  uintptr_t u = reinterpret_cast<uintptr_t>(user);
  region->user = u;
  region->bytes = bytes;
  region->shadow.resize(u - kRedZone, u + bytes + kRedZone);
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.by_base[u - kRedZone] = std::move(region);
}

void on_raw_free(void* user) {
  if (!instrumented()) return;
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.by_base.erase(reinterpret_cast<uintptr_t>(user) - kRedZone);
  r.generation.fetch_add(1, std::memory_order_release);
}

void on_alloc(void* ptr, size_t requested) {
  if (!instrumented() || !ptr) return;
  Region* region = find_region(reinterpret_cast<uintptr_t>(ptr));
  if (!region) return;
  region->requested = requested;
  region->live = true;
  std::fill(region->shadow.written.begin(), region->shadow.written.end(), 0u);
  std::fill(region->shadow.race.begin(), region->shadow.race.end(), RaceCell{});
}

void on_free(void* ptr) {
  if (!instrumented() || !ptr) return;
  if (Region* region = find_region(reinterpret_cast<uintptr_t>(ptr))) region->live = false;
}

void mark_written(const void* ptr, size_t bytes) {
  if (!instrumented() || bytes == 0) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
  Region* region = find_region(a);
  if (!region) return;
  uintptr_t end = std::min(a + bytes, region->shadow.end);
  std::fill(region->shadow.written.begin() + (a - region->shadow.base),
            region->shadow.written.begin() + (end - region->shadow.base), 1u);
}

}  // namespace rg::sim::check

// SanitizerCoverage's per-module constructor: instrumented kernel objects are linked in.
extern "C" void __sanitizer_cov_bool_flag_init(bool*, bool*) {
  rg::sim::check::g_instrumented.store(true, std::memory_order_relaxed);
}
