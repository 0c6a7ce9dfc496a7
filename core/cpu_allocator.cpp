// Caching allocator for host memory (the cpu device).
// Why: a fresh large allocation costs page faults (~10 us per 4 KiB page here), and glibc
// returns blocks over 32 MiB to the OS on every free, so a training step that frees and
// re-allocates its activations would fault on every step. Freed blocks are kept in free
// lists keyed by a rounded size class and handed out again. Blocks are 64-byte aligned;
// blocks of 2 MiB and more are 2 MiB aligned and advised to use transparent huge pages.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/device_interface.h"
#include "core/error.h"

namespace rg {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Rounds up to 64 bytes for small blocks, otherwise to a size with a 3-bit mantissa
// (at most 12.5% waste), so nearby sizes share a class.
size_t size_class(size_t n) {
  if (n <= 4096) return (n + 63) & ~size_t(63);
  int msb = 63 - __builtin_clzll(n);
  size_t step = size_t(1) << (msb - 3);
  return (n + step - 1) & ~(step - 1);
}

struct CpuCachingAllocator {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_blocks;  // class size -> blocks
  AllocatorStats stats;

  void* allocate(size_t nbytes) {
    size_t cls = size_class(std::max<size_t>(nbytes, 1));
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = free_blocks.find(cls);
      if (it != free_blocks.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        note_alloc(cls);
        return p;
      }
    }
    size_t align = cls >= kHugePage ? kHugePage : 64;
    void* p = std::aligned_alloc(align, (cls + align - 1) / align * align);
    RG_CHECK(p != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes");
    if (cls >= kHugePage) madvise(p, cls, MADV_HUGEPAGE);
    std::lock_guard<std::mutex> lock(mutex);
    stats.reserved += cls;
    stats.system_allocs++;
    note_alloc(cls);
    return p;
  }

  void deallocate(void* p, size_t nbytes) {
    size_t cls = size_class(std::max<size_t>(nbytes, 1));
    std::lock_guard<std::mutex> lock(mutex);
    free_blocks[cls].push_back(p);
    stats.allocated -= cls;
  }

  void note_alloc(size_t cls) {
    stats.allocated += cls;
    stats.peak_allocated = std::max(stats.peak_allocated, stats.allocated);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [cls, blocks] : free_blocks) {
      for (void* p : blocks) std::free(p);
      stats.reserved -= cls * blocks.size();
    }
    free_blocks.clear();
  }
};

CpuCachingAllocator& cpu_allocator() {
  static auto* a = new CpuCachingAllocator();  // never destroyed: tensors may outlive main
  return *a;
}

void cpu_copy(void* dst, Device, const void* src, Device, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

const bool registered = [] {
  DeviceInterface d;
  d.allocate = [](size_t n, int) { return cpu_allocator().allocate(n); };
  d.deallocate = [](void* p, size_t n, int) { cpu_allocator().deallocate(p, n); };
  d.copy = cpu_copy;
  d.synchronize = [](int) {};
  d.stats = [](int) {
    std::lock_guard<std::mutex> lock(cpu_allocator().mutex);
    return cpu_allocator().stats;
  };
  d.empty_cache = [](int) { cpu_allocator().empty_cache(); };
  register_device(DeviceType::cpu, d);
  return true;
}();

}  // namespace
}  // namespace rg
