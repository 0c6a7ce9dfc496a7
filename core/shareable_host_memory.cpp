// The shareable arena (see the header): one memory file per process, mapped once over its
// whole size, and a bump pointer. Blocks are never given back to the bump pointer: the
// allocator caches them by size class, as it caches malloc's blocks, and on empty_cache
// their pages (all but the last) go back to the system while their addresses stay.
//
// Fork: a pthread_atfork handler replaces, in the child, the shared mapping of the blocks in
// use by a private copy at the same addresses (mmap, read the file into it, mremap over it)
// and drops the rest of the file, so the child's tensors keep their contents and parent and
// child never write each other's memory. The copy's range stays known (its blocks are freed into
// the arena lists, never to malloc), and a child that makes a group of its own gets a new arena.
#include "core/shareable_host_memory.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace rg {
namespace {

constexpr size_t kPage = 4096;
constexpr int kMaxRanges = 16;  // the arena, and a private copy per fork that made a new one

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Reads the first `bytes` of file `fd` into `dst`. The fork handler copies the arena's blocks
// so (the file holds what its mapping shows), not with memcpy: under AddressSanitizer the
// cpu allocator poisons the tails of blocks and the cached blocks (core/cpu_allocator.h),
// and memcpy would report reading them. The child keeps that poisoning.
bool read_file(int fd, char* dst, size_t bytes) {
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = pread(fd, dst + done, bytes - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Address space that holds (or held) arena blocks: a shared arena, or a child's copy of one.
struct Range {
  char* base = nullptr;
  size_t size = 0;
  bool shared = false;
  bool holds(const void* p) const {
    const char* c = static_cast<const char*>(p);
    return c >= base && c < base + size;
  }
};

struct Arena {
  std::mutex mutex;
  int fd = -1;  // the current arena's file; -1: none (yet, or after fork)
  uint64_t inode = 0;
  size_t used = 0;  // bump pointer in the current arena
  // The allocator asks wants() and contains() on every allocation and free, so those two
  // read without the mutex: min_bytes is SIZE_MAX while there is no current arena, and a
  // range is complete before `count` counts it (ranges are only appended; a forked child,
  // one thread, shrinks its last one).
  std::atomic<size_t> min_bytes{SIZE_MAX};  // blocks from this size come from the arena
  Range ranges[kMaxRanges];  // every range ever made; the last is current while fd >= 0
  std::atomic<int> count{0};

  Range* current() { return fd >= 0 ? &ranges[count.load() - 1] : nullptr; }
  const Range* find(const void* p) const {
    const int made = count.load(std::memory_order_acquire);
    for (int i = 0; i < made; ++i)
      if (ranges[i].holds(p)) return &ranges[i];
    return nullptr;
  }

  bool open() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    if (pages <= 0 || count == kMaxRanges) return false;
    const size_t size = round_up(static_cast<size_t>(pages) * kPage, size_t(2) << 20);
    const int file = memfd_create("ringgrad-host-arena", MFD_CLOEXEC);
    if (file < 0) return false;
    struct stat st {};
    void* p = MAP_FAILED;
    if (ftruncate(file, static_cast<off_t>(size)) == 0 && fstat(file, &st) == 0)
      p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, file, 0);
    if (p == MAP_FAILED) {
      close(file);
      return false;
    }
    const int made = count.load();
    ranges[made] = {static_cast<char*>(p), size, true};
    count.store(made + 1, std::memory_order_release);
    fd = file;
    inode = st.st_ino;
    used = 0;
    return true;
  }

  // In a forked child (one thread, the mutex held by the prepare handler): the blocks in use
  // become a private copy at the same addresses; the rest of the file is dropped.
  void make_private() {
    Range* range = current();
    if (range == nullptr) return;
    const size_t in_use = round_up(used, kPage);
    if (in_use > 0) {
      void* copy =
          mmap(nullptr, in_use, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (copy == MAP_FAILED || !read_file(fd, static_cast<char*>(copy), in_use))
        _exit(127);  // the child could not keep its memory
      if (mremap(copy, in_use, in_use, MREMAP_MAYMOVE | MREMAP_FIXED, range->base) == MAP_FAILED)
        _exit(127);
    }
    if (range->size > in_use) munmap(range->base + in_use, range->size - in_use);
    *range = {range->base, in_use, false};
    close(fd);
    fd = -1;
    min_bytes = SIZE_MAX;  // until this process asks again, for an arena of its own
  }
};

thread_local int t_scopes = 0;  // live ShareableAllocations of this thread

std::atomic<Arena*> g_made{nullptr};  // the arena once made: contains() never makes one

Arena& arena() {
  static auto* a = [] {
    auto* made = new Arena();  // never destroyed: blocks may be freed after main returns
    g_made.store(made, std::memory_order_release);
    return made;
  }();
  return *a;
}

void register_fork_handlers() {
  pthread_atfork([] { arena().mutex.lock(); }, [] { arena().mutex.unlock(); },
                 [] {
                   arena().make_private();
                   arena().mutex.unlock();
                 });
}

}  // namespace

ShareableAllocations::ShareableAllocations() { ++t_scopes; }
ShareableAllocations::~ShareableAllocations() { --t_scopes; }

bool share_large_host_blocks(size_t min_bytes) {
  static std::once_flag handlers;
  std::call_once(handlers, register_fork_handlers);
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  if (a.fd < 0 && !a.open()) return false;
  a.min_bytes = std::min(a.min_bytes.load(), std::max<size_t>(min_bytes, 1));
  return true;
}

ShareableLocation shareable_location(const void* p, size_t bytes) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  const Range* range = a.current();
  const char* c = static_cast<const char*>(p);
  if (range == nullptr || c < range->base || c + bytes > range->base + a.used) return {};
  return {a.fd, a.inode, c - range->base};
}

namespace shareable_arena {

bool wants(size_t bytes) {
  return t_scopes > 0 && bytes >= arena().min_bytes.load(std::memory_order_relaxed);
}

void* allocate(size_t bytes) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  Range* range = a.current();
  const size_t take = round_up(bytes, kPage);
  if (range == nullptr || take > range->size - a.used) return nullptr;
  char* p = range->base + a.used;
  a.used += take;
  return p;
}

// Called on every free: without an arena (never asked for) it allocates nothing.
bool contains(const void* p) {
  const Arena* a = g_made.load(std::memory_order_acquire);
  return a != nullptr && a->find(p) != nullptr;
}

void release_pages(void* p, size_t bytes) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mutex);
  const Range* range = a.find(p);
  // Blocks are page-aligned; the page of the block's last word (the link) stays.
  const auto start = reinterpret_cast<uintptr_t>(p);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes - sizeof(void*)) / kPage * kPage;
  if (range == nullptr || end <= start) return;
  // Shared: punch the pages out of the file; a forked child's private copy: drop them.
  madvise(reinterpret_cast<void*>(start), end - start, range->shared ? MADV_REMOVE : MADV_DONTNEED);
}

}  // namespace shareable_arena
}  // namespace rg
