// The caching allocator's blocks and segments (kernels/cuda/block_pool.h) over a fake raw
// memory with a budget and events the test completes by hand: split blocks merge back into
// whole segments, best fit, a free list per stream, record_stream holding a block back, out of
// memory giving back only whole free segments, and stats that add up.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/caching_allocator.h"

using rg::AllocatorStats;
using rg::gpu::CachingAllocator;

namespace {

constexpr size_t kMiB = size_t(1) << 20;
void* const kStreamA = reinterpret_cast<void*>(0x10);
void* const kStreamB = reinterpret_cast<void*>(0x20);
void* const kStreamC = reinterpret_cast<void*>(0x30);

// Raw memory with a budget, counting its calls; an event is a flag the test sets.
namespace fake {
size_t budget = 0, in_use = 0;
int allocs = 0, releases = 0;
std::map<void*, size_t> sizes;
std::deque<bool> events;  // deque: the flags stay where they are

void* allocate(size_t n, int) {
  if (in_use + n > budget) return nullptr;
  void* p = std::aligned_alloc(512, n);
  sizes[p] = n;
  in_use += n;
  allocs++;
  return p;
}
void release(void* p, int) {
  in_use -= sizes.at(p);
  sizes.erase(p);
  releases++;
  std::free(p);
}
size_t total(int) { return budget; }
void* record_event(void*, int) noexcept {
  events.push_back(false);
  return &events.back();
}
bool event_done(void* e) noexcept { return *static_cast<bool*>(e); }
void event_synchronize(void* e) noexcept { *static_cast<bool*>(e) = true; }
void event_release(void*) noexcept {}
}  // namespace fake

struct FakeDevice {
  explicit FakeDevice(size_t budget, bool whole_blocks = false)
      : allocator("fake", raw(budget, whole_blocks), 0) {}
  ~FakeDevice() { allocator.empty_cache(); }
  static rg::gpu::RawMemory raw(size_t budget, bool whole_blocks) {
    fake::budget = budget;
    fake::in_use = 0;
    fake::allocs = fake::releases = 0;
    fake::events.clear();
    return {fake::allocate,   fake::release,           fake::total,         fake::record_event,
            fake::event_done, fake::event_synchronize, fake::event_release, whole_blocks};
  }
  char* alloc(size_t n, void* stream = kStreamA) {
    return static_cast<char*>(allocator.allocate(n, stream));
  }
  void free(void* p) { allocator.deallocate(p); }
  CachingAllocator allocator;
};

}  // namespace

TEST_CASE("split blocks merge back: freeing every block returns the segment whole") {
  FakeDevice d(64 * kMiB);
  char* a = d.alloc(1000);
  char* b = d.alloc(5000);
  char* c = d.alloc(70000);
  CHECK(fake::allocs == 1);  // one 2 MiB segment, carved in address order
  CHECK(b == a + 1024);
  CHECK(c == b + 5120);
  AllocatorStats s = d.allocator.stats();
  CHECK(s.segments == 1);
  CHECK(s.splits == 3);
  CHECK(s.reserved == 2 * kMiB);
  CHECK(s.allocated == 1024 + 5120 + 70144);
  CHECK(s.largest_free_block == s.reserved - s.allocated);
  d.free(b);  // between two blocks in use: no merge
  CHECK(d.allocator.stats().merges == 0);
  CHECK(d.allocator.stats().inactive_split == 2 * kMiB - 1024 - 70144);
  d.free(a);  // merges with b
  d.free(c);  // merges with a+b, then with the rest of the segment
  s = d.allocator.stats();
  CHECK(s.merges == 3);
  CHECK(s.active == 0);
  CHECK(s.inactive_split == 0);
  CHECK(s.largest_free_block == 2 * kMiB);
  CHECK(s.fragmentation() == 0.0);
  CHECK(d.alloc(kMiB) == a);  // the whole segment's start again, no new segment
  CHECK(fake::allocs == 1);
  d.free(a);
  d.allocator.empty_cache();
  CHECK(fake::releases == 1);
  CHECK(d.allocator.stats().reserved == 0);
}

TEST_CASE("a request takes the smallest free block that fits") {
  FakeDevice d(64 * kMiB);
  char* p64 = d.alloc(64 << 10);
  char* x1 = d.alloc(4096);
  char* p16 = d.alloc(16 << 10);
  char* x2 = d.alloc(4096);
  char* p32 = d.alloc(32 << 10);
  char* x3 = d.alloc(4096);
  for (char* p : {p64, p16, p32}) d.free(p);  // three holes and the segment's tail
  AllocatorStats s = d.allocator.stats();
  const size_t free_bytes = s.reserved - s.active;
  CHECK(s.largest_free_block == 2 * kMiB - (64 << 10) - (16 << 10) - (32 << 10) - 3 * 4096);
  CHECK(s.fragmentation() == doctest::Approx(1.0 - double(s.largest_free_block) / free_bytes));
  CHECK(s.fragmentation() > 0.0);
  CHECK(d.alloc(15000) == p16);
  CHECK(d.alloc(20000) == p32);
  CHECK(d.alloc(40000) == p64);
  CHECK(fake::allocs == 1);
  for (char* p : {p64, x1, p16, x2, p32, x3}) d.free(p);
  CHECK(d.allocator.stats().largest_free_block == 2 * kMiB);
}

TEST_CASE("the large pool keeps a rest only over 1 MiB; a smaller one stays with the block") {
  FakeDevice d(64 * kMiB);
  char* a = d.alloc(3 * kMiB);  // a 20 MiB segment: the 17 MiB rest is kept
  CHECK(d.allocator.stats().splits == 1);
  char* b = d.alloc(16 * kMiB + kMiB / 2);  // takes the 17 MiB block whole
  CHECK(b == a + 3 * kMiB);
  AllocatorStats s = d.allocator.stats();
  CHECK(s.splits == 1);
  CHECK(s.active - s.allocated == kMiB / 2);
  CHECK(s.largest_free_block == 0);
  CHECK(fake::allocs == 1);
  d.free(a);
  d.free(b);
  CHECK(d.allocator.stats().largest_free_block == 20 * kMiB);
}

TEST_CASE("a freed block is reused only on its own stream, and pools stay apart") {
  FakeDevice d(256 * kMiB);
  char* p = d.alloc(4096, kStreamA);
  d.free(p);
  char* q = d.alloc(4096, kStreamB);
  CHECK(q != p);
  CHECK(fake::allocs == 2);
  char* r = d.alloc(4096, kStreamA);
  CHECK(r == p);
  char* large = d.alloc(3 * kMiB, kStreamA);  // the large pool: a segment of its own
  CHECK(fake::allocs == 3);
  CHECK(d.allocator.stats().reserved == 2 * kMiB + 2 * kMiB + 20 * kMiB);
  for (char* x : {q, r, large}) d.free(x);
}

TEST_CASE("record_stream keeps a freed block out of reuse until its event completes") {
  FakeDevice d(64 * kMiB);
  char* p = d.alloc(4096);
  CHECK(d.allocator.record_stream(p, kStreamB, 0));
  CHECK_FALSE(d.allocator.record_stream(p + 512, kStreamB, 0));  // not a block's start
  d.free(p);
  AllocatorStats s = d.allocator.stats();
  CHECK(s.allocated == 0);
  CHECK(s.active == 4096);  // waiting for stream B
  char* q = d.alloc(4096);
  CHECK(q != p);
  REQUIRE(fake::events.size() == 1);
  fake::events.back() = true;  // stream B's work on p is done
  d.free(q);
  char* r = d.alloc(8192);  // p came back and merged with q
  CHECK(r == p);
  d.free(r);
  CHECK(d.allocator.stats().active == 0);
}

TEST_CASE("out of memory gives back only whole free segments, then fails clearly") {
  FakeDevice d(40 * kMiB);
  char* small = d.alloc(1000);  // its segment is split: it must stay
  std::memset(small, 7, 1000);
  d.free(d.alloc(12 * kMiB, kStreamA));  // a whole free 12 MiB segment
  d.free(d.alloc(3 * kMiB, kStreamB));   // a whole free 20 MiB segment
  CHECK(fake::in_use == 34 * kMiB);
  char* huge = d.alloc(24 * kMiB, kStreamC);  // fits once both free segments are gone
  CHECK(fake::releases == 2);
  AllocatorStats s = d.allocator.stats();
  CHECK(s.segments == 2);
  CHECK(s.reserved == 26 * kMiB);
  CHECK(small[0] == 7);
  CHECK(small[999] == 7);
  CHECK_THROWS_WITH_AS(d.alloc(30 * kMiB, kStreamC),
                       doctest::Contains("out of memory: tried to allocate 31457280 bytes"),
                       rg::Error);
  CHECK(fake::releases == 2);  // nothing in use was touched
  CHECK(d.allocator.stats().segments == 2);
  d.free(huge);
  d.free(small);
}

TEST_CASE("allocator stats add up over a random sequence, and every segment ends whole") {
  FakeDevice d(size_t(1) << 30);
  std::mt19937 rng(7);
  std::vector<std::pair<char*, size_t>> live;
  size_t want_allocated = 0;
  for (int step = 0; step < 3000; ++step) {
    if (live.empty() || rng() % 5 < 3) {
      size_t n = rng() % 8 == 0 ? kMiB + rng() % (12 * kMiB) : 1 + rng() % 200000;
      live.emplace_back(d.alloc(n, rng() % 2 ? kStreamA : kStreamB), n);
      want_allocated += CachingAllocator::size_class(n);
    } else {
      size_t i = rng() % live.size();
      d.free(live[i].first);
      want_allocated -= CachingAllocator::size_class(live[i].second);
      live.erase(live.begin() + long(i));
    }
    AllocatorStats s = d.allocator.stats();
    REQUIRE(s.allocated == want_allocated);
    REQUIRE(s.active >= s.allocated);
    REQUIRE(s.reserved == fake::in_use);
    REQUIRE(s.segments == uint64_t(fake::allocs - fake::releases));
    REQUIRE(s.inactive_split <= s.free_cached());
    REQUIRE(s.largest_free_block <= s.free_cached());
  }
  std::vector<std::pair<char*, size_t>> sorted = live;  // blocks in use never overlap
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    CHECK(sorted[i - 1].first + sorted[i - 1].second <= sorted[i].first);
  for (auto& [p, n] : live) d.free(p);
  AllocatorStats s = d.allocator.stats();
  CHECK(s.splits > 100);
  CHECK(s.merges > 100);
  CHECK(s.active == 0);
  CHECK(s.inactive_split == 0);  // all merged back
  CHECK(s.free_cached() == s.reserved);
  d.allocator.empty_cache();
  CHECK(fake::in_use == 0);
}

// sim-check's raw memory (RawMemory::whole_blocks): every block is a raw allocation of its
// own size and is never split, so each allocation keeps its own red zones and live flag.
TEST_CASE("whole blocks: each allocation its own segment, never split") {
  FakeDevice d(64 * kMiB, /*whole_blocks=*/true);
  char* a = d.alloc(1000);
  char* b = d.alloc(3000);
  CHECK(fake::allocs == 2);
  CHECK(fake::sizes.at(a) == 1024);
  CHECK(fake::sizes.at(b) == 3072);
  d.free(b);
  char* c = d.alloc(512);  // reuses b's block whole
  CHECK(c == b);
  CHECK(fake::allocs == 2);
  AllocatorStats s = d.allocator.stats();
  CHECK(s.splits == 0);
  CHECK(s.segments == 2);
  d.free(a);
  d.free(c);
}
