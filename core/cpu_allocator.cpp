// Caching allocator for host memory (the cpu device).
// Why: a fresh large allocation costs page faults (~10 us per 4 KiB page here), and glibc
// returns blocks over 32 MiB to the OS on every free, so a training step that frees and
// re-allocates its activations would fault on every step. Freed blocks are kept in free
// lists keyed by a rounded size class and handed out again; the lists are intrusive, so the
// free path never allocates. Blocks are 64-byte aligned;
// blocks of 2 MiB and more are 2 MiB aligned and advised to use transparent huge pages.
// Once a process group asks for it, large blocks come from the shareable arena instead
// (core/shareable_host_memory.h), cached in lists of their own. Under AddressSanitizer the
// bytes that no tensor may read are poisoned, and RG_CPU_ALLOCATOR_CACHING=0 turns the cache
// off (core/cpu_allocator.h).
#include "core/cpu_allocator.h"

#include <pthread.h>
#include <sys/mman.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/device_interface.h"
#include "core/error.h"
#include "core/memory_limits.h"
#include "core/shareable_host_memory.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RG_ASAN_POISONING 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RG_ASAN_POISONING 1
#endif
#ifdef RG_ASAN_POISONING
#include <sanitizer/asan_interface.h>
#endif

namespace rg {

bool cpu_allocator_caching(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "1") == 0) return true;
  RG_CHECK(std::strcmp(value, "0") == 0,
           "RG_CPU_ALLOCATOR_CACHING: expected 0 (free every block to the system) or 1 (cache "
           "freed blocks), got '",
           value, "'");
  return false;
}

namespace {

// Under AddressSanitizer: bytes of [p, p + n) that a load or store reports (poison) or may
// touch again (unpoison). Nothing otherwise.
void poison(const void* p, size_t n) {
#ifdef RG_ASAN_POISONING
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

void unpoison(const void* p, size_t n) {
#ifdef RG_ASAN_POISONING
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

constexpr size_t kHugePage = size_t(2) << 20;

// Size classes: multiples of 64 up to 4096 (indices 1..64), then sizes with a 3-bit mantissa
// (at most 12.5% waste), 8 per power of two, so nearby sizes share a class.
constexpr int kSmallClasses = 4096 / 64;
constexpr int kNumClasses = kSmallClasses + 1 + (64 - 12) * 8;

struct SizeClass {
  int index;
  size_t bytes;
};

SizeClass size_class(size_t n) {
  if (n <= 4096) {
    size_t bytes = (n + 63) & ~size_t(63);
    return {static_cast<int>(bytes / 64), bytes};
  }
  int msb = 63 - __builtin_clzll(n);
  size_t step = size_t(1) << (msb - 3);
  size_t bytes = (n + step - 1) & ~(step - 1);
  // bytes is 8..16 steps; 16 steps is the first class of the next power of two.
  msb = 63 - __builtin_clzll(bytes);
  int mantissa = static_cast<int>((bytes >> (msb - 3)) & 7);
  return {kSmallClasses + 1 + (msb - 12) * 8 + mantissa, bytes};
}

// A cached block: the link to the next free block of its class lives in the block itself,
// so freeing never allocates and cannot fail, even when the system is out of memory (the
// free runs in Storage's destructor, possibly while an out-of-memory error unwinds).
// The link is the block's last word, and the only one left unpoisoned while the block is
// cached: LeakSanitizer skips poisoned words, so it would take the blocks behind a poisoned
// link for leaks; and a read after free, which most likely starts at the block's start, is
// still reported.
void** link_of(void* block, size_t bytes) {
  return reinterpret_cast<void**>(static_cast<char*>(block) + bytes - sizeof(void*));
}

void* pop(void*& head, size_t bytes) {
  void* block = head;
  if (block) head = *link_of(block, bytes);
  return block;
}

void push(void*& head, void* block, size_t bytes) {
  poison(block, bytes);
  void** link = link_of(block, bytes);
  unpoison(link, sizeof(void*));
  *link = head;
  head = block;
}

// A block of `block_bytes` handed out for `nbytes`: only those may be touched.
void* hand_out(void* p, size_t nbytes, size_t block_bytes) {
  poison(p, block_bytes);
  unpoison(p, nbytes);
  return p;
}

struct CpuCachingAllocator {
  explicit CpuCachingAllocator(bool caching) : caching(caching) {}
  const bool caching;  // false: RG_CPU_ALLOCATOR_CACHING=0
  std::mutex mutex;
  std::array<void*, kNumClasses> free_lists{};   // class index -> cached blocks
  std::array<void*, kNumClasses> arena_lists{};  // the same, for shareable arena blocks
  AllocatorStats stats;

  void* allocate(size_t nbytes) {
    if (nbytes > (size_t(1) << 62)) throw allocation_error("cpu allocator", nbytes);
    SizeClass cls = size_class(std::max<size_t>(nbytes, 1));
    const bool shareable = shareable_arena::wants(cls.bytes);
    auto& lists = shareable ? arena_lists : free_lists;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (void* block = pop(lists[cls.index], cls.bytes)) {
        note_alloc(cls.bytes);
        return hand_out(block, nbytes, cls.bytes);
      }
    }
    void* p = shareable ? shareable_arena::allocate(cls.bytes) : nullptr;
    if (p == nullptr) p = system_allocate(cls.bytes);
    if (p == nullptr) {  // give the cached blocks back to the system, then try once more
      empty_cache();
      p = system_allocate(cls.bytes);
    }
    if (p == nullptr) throw allocation_error("cpu allocator", nbytes);
    std::lock_guard<std::mutex> lock(mutex);
    stats.reserved += cls.bytes;
    stats.system_allocs++;
    note_alloc(cls.bytes);
    return hand_out(p, nbytes, cls.bytes);
  }

  static void* system_allocate(size_t bytes) {
    size_t align = bytes >= kHugePage ? kHugePage : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p != nullptr && bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
    return p;
  }

  void deallocate(void* p, size_t nbytes) noexcept {
    SizeClass cls = size_class(std::max<size_t>(nbytes, 1));
    const bool in_arena = shareable_arena::contains(p);
    if (!caching && !in_arena) {
      std::free(p);
      std::lock_guard<std::mutex> lock(mutex);
      stats.allocated -= cls.bytes;
      stats.reserved -= cls.bytes;
      return;
    }
    // An arena block keeps its address (the arena never takes one back); its pages go back.
    if (!caching) shareable_arena::release_pages(p, cls.bytes);
    auto& lists = in_arena ? arena_lists : free_lists;
    std::lock_guard<std::mutex> lock(mutex);
    push(lists[cls.index], p, cls.bytes);  // under the lock: once listed, it may be handed out
    stats.allocated -= cls.bytes;
  }

  void note_alloc(size_t bytes) {
    stats.allocated += bytes;
    stats.peak_allocated = std::max(stats.peak_allocated, stats.allocated);
  }

  void empty_cache() noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    for (int index = 0; index < kNumClasses; ++index) {
      const size_t bytes = class_bytes(index);
      while (void* block = pop(free_lists[index], bytes)) {
        stats.reserved -= bytes;
        std::free(block);
      }
      // Arena blocks keep their addresses (and stay reserved); their pages go back.
      for (void* block = arena_lists[index]; block; block = *link_of(block, bytes))
        shareable_arena::release_pages(block, bytes);
    }
  }

  static size_t class_bytes(int index) {
    if (index <= kSmallClasses) return size_t(index) * 64;
    int k = index - kSmallClasses - 1;
    int msb = 12 + k / 8;
    return (size_t(8 + k % 8)) << (msb - 3);
  }
};

CpuCachingAllocator& cpu_allocator() {
  static auto* a = [] {
    const bool caching = cpu_allocator_caching(std::getenv("RG_CPU_ALLOCATOR_CACHING"));
    // A forked child's arena blocks are its private copy (core/shareable_host_memory.cpp):
    // its cached ones must not be handed out as shareable when it makes an arena of its own.
    pthread_atfork(nullptr, nullptr, [] { cpu_allocator().arena_lists.fill(nullptr); });
    return new CpuCachingAllocator(caching);
  }();  // never destroyed: tensors may outlive main
  return *a;
}

void cpu_copy(void* dst, Device, const void* src, Device, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

}  // namespace

void register_cpu_device() {  // called by register_builtin_backends (kernels/builtin.h)
  DeviceInterface d;
  d.allocate = [](size_t n, int) { return cpu_allocator().allocate(n); };
  d.deallocate = [](void* p, size_t n, int) { cpu_allocator().deallocate(p, n); };
  d.block_bytes = [](size_t n) { return size_class(std::max<size_t>(n, 1)).bytes; };
  d.copy = cpu_copy;
  d.synchronize = [](int) {};
  d.stats = [](int) {
    std::lock_guard<std::mutex> lock(cpu_allocator().mutex);
    return cpu_allocator().stats;
  };
  d.empty_cache = [](int) { cpu_allocator().empty_cache(); };
  register_device(DeviceType::cpu, d);
}

}  // namespace rg
