// Blocks carved from segments: the splitting and merging half of the caching allocator
// (caching_allocator.h keeps streams, events, the cap and the raw memory). A segment is one
// raw allocation, tiled exactly by a chain of blocks in address order (prev/next). A request
// takes the best-fitting free block of its free list (the smallest that fits, the lowest
// address among equals) and splits off the rest when it is worth keeping: any rest in the
// small pool (requests up to 1 MiB, carved from 2 MiB segments), a rest over 1 MiB in the
// large pool (requests under 10 MiB get a 20 MiB segment, larger ones their size rounded up to
// 2 MiB). A freed block merges with its free neighbours, so a segment whose blocks are all
// free is one block again; only such whole free segments go back to the system.
// Free lists are keyed by FreeListKey (pool, stream, size class): pool 0 is the general one,
// others a CUDA graph's private pool (kernels/cuda/graph.h). A segment's blocks share one
// list; only move_pool, when a graph dies, moves whole segments to another pool's lists.
// give_back never allocates (it runs in deallocate, which must not throw): a block out of its
// list keeps its own list node, and merging only frees.
#pragma once
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

namespace rg::gpu {

struct RawMemory;

inline constexpr size_t kBlockGranule = 512;              // every block size is a multiple
inline constexpr size_t kSmallRequest = size_t(1) << 20;  // up to this: the small pool
inline constexpr size_t kSmallSegment = size_t(2) << 20;
inline constexpr size_t kMidRequest = size_t(10) << 20;  // large, under this: a 20 MiB segment
inline constexpr size_t kMidSegment = size_t(20) << 20;
inline constexpr size_t kSegmentRounding = size_t(2) << 20;  // larger: rounded up to this
inline constexpr size_t kLargeSplitMin = size_t(1) << 20;    // large rests kept when over this
inline constexpr int kMaxUses = 4;  // streams besides a block's own (record_stream)

struct Block;
struct BySizeThenAddress {
  using is_transparent = void;  // lower_bound(size): the best fit
  bool operator()(const Block* a, const Block* b) const;
  bool operator()(const Block* a, size_t size) const;
  bool operator()(size_t size, const Block* b) const;
};
using FreeList = std::set<Block*, BySizeThenAddress>;

struct StreamUse {
  void* stream;
  int device;
};

struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  void* stream = nullptr;    // the stream it was allocated for
  uint64_t pool = 0;         // its free list's pool (FreeListKey::pool): 0, or a graph's
  FreeList* list = nullptr;  // the free list it returns to
  Block* prev = nullptr;     // neighbours in its segment, in address order
  Block* next = nullptr;
  bool free = false;     // in its free list
  size_t requested = 0;  // in use: the rounded request, what `allocated` counts
  int uses = 0;          // other streams that use it (record_stream)
  std::array<StreamUse, kMaxUses> use{};
  FreeList::node_type node;  // its list node while it is out of the list
  bool whole_segment() const { return !prev && !next; }
};

struct FreeListKey {
  uint64_t pool;  // 0: the general pool
  void* stream;
  bool small;
  auto operator<=>(const FreeListKey&) const = default;
};

struct BlockPoolStats {
  size_t reserved = 0;        // bytes of all segments
  size_t free = 0;            // bytes of free blocks
  size_t inactive_split = 0;  // bytes of free blocks in segments that also hold other blocks
  size_t largest_free = 0;
  uint64_t segments = 0, splits = 0, merges = 0;
};

class BlockPool {
 public:
  BlockPool() = default;
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool();  // frees the bookkeeping only: the owner gives the memory back first

  static size_t round_size(size_t nbytes);  // the block size of a request
  static size_t segment_size(size_t size);  // the segment a new block of `size` comes in
  static bool is_small(size_t size) { return size <= kSmallRequest; }

  // The best fit for `size` in the list of `key`, out of the list and (when `split`) split;
  // null when no free block fits. Throws (std::bad_alloc) only before it changes anything.
  Block* take(const FreeListKey& key, size_t size, bool split = true);
  // Adds raw memory [ptr, ptr + bytes) as one free block of `key`'s list. Throws only before
  // it changes anything (the caller still owns ptr then).
  void add_segment(const FreeListKey& key, void* ptr, size_t bytes);
  // Puts a block that take() returned back into its list, merged with its free neighbours.
  void give_back(Block* block) noexcept;
  // Gives every whole free segment of `pool` back to `raw`; returns their bytes.
  size_t release_free_segments(const RawMemory& raw, int device, uint64_t pool = 0) noexcept;
  // Moves every segment of pool `from` (free blocks and blocks in use) to pool `to`'s lists.
  void move_pool(uint64_t from, uint64_t to);
  size_t pool_reserved(uint64_t pool) const;  // bytes of the segments of `pool`
  BlockPoolStats stats() const;

 private:
  static std::unique_ptr<Block> new_block(FreeList& list);
  void insert_free(Block* block) noexcept;
  void erase_free(Block* block) noexcept;
  void absorb(Block* lower, Block* upper) noexcept;

  std::map<FreeListKey, FreeList> lists_;
  std::set<Block*> segments_;  // the first block of each segment (it survives every merge)
  BlockPoolStats stats_;       // all but largest_free, kept as blocks move
  std::map<uint64_t, size_t> pool_bytes_;  // bytes of each pool's segments
};

}  // namespace rg::gpu
