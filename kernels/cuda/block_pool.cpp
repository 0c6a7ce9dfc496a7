// See block_pool.h.
#include "kernels/cuda/block_pool.h"

#include <algorithm>
#include <utility>

#include "kernels/cuda/caching_allocator.h"

namespace rg::gpu {

bool BySizeThenAddress::operator()(const Block* a, const Block* b) const {
  return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
}
bool BySizeThenAddress::operator()(const Block* a, size_t size) const { return a->size < size; }
bool BySizeThenAddress::operator()(size_t size, const Block* b) const { return size < b->size; }

BlockPool::~BlockPool() {
  for (Block* first : segments_)
    for (Block* b = first; b;) delete std::exchange(b, b->next);
}

size_t BlockPool::round_size(size_t nbytes) {
  nbytes = std::max<size_t>(nbytes, 1);
  return (nbytes + kBlockGranule - 1) / kBlockGranule * kBlockGranule;
}

size_t BlockPool::segment_size(size_t size) {
  if (is_small(size)) return kSmallSegment;
  if (size < kMidRequest) return kMidSegment;
  return (size + kSegmentRounding - 1) / kSegmentRounding * kSegmentRounding;
}

// A block with a list node of its own, so that putting it in `list` never allocates.
std::unique_ptr<Block> BlockPool::new_block(FreeList& list) {
  auto block = std::make_unique<Block>();
  FreeList scratch(list.key_comp());
  scratch.insert(block.get());
  block->node = scratch.extract(scratch.begin());
  return block;
}

void BlockPool::insert_free(Block* block) noexcept {
  block->free = true;
  stats_.free += block->size;
  if (!block->whole_segment()) stats_.inactive_split += block->size;
  block->list->insert(std::move(block->node));
}

void BlockPool::erase_free(Block* block) noexcept {
  block->node = block->list->extract(block);
  block->free = false;
  stats_.free -= block->size;
  if (!block->whole_segment()) stats_.inactive_split -= block->size;
}

Block* BlockPool::take(const FreeListKey& key, size_t size, bool may_split) {
  auto found = lists_.find(key);
  if (found == lists_.end()) return nullptr;
  FreeList& list = found->second;
  auto it = list.lower_bound(size);
  if (it == list.end()) return nullptr;
  Block* block = *it;
  const size_t rest = block->size - size;
  const bool split = may_split && (key.small ? rest >= kBlockGranule : rest > kLargeSplitMin);
  std::unique_ptr<Block> remainder = split ? new_block(list) : nullptr;  // may throw: first
  erase_free(block);
  if (remainder) {
    remainder->ptr = block->ptr + size;
    remainder->size = rest;
    remainder->stream = block->stream;
    remainder->pool = block->pool;
    remainder->list = &list;
    remainder->prev = block;
    remainder->next = block->next;
    if (block->next) block->next->prev = remainder.get();
    block->next = remainder.get();
    block->size = size;
    insert_free(remainder.release());
    stats_.splits++;
  }
  return block;
}

void BlockPool::add_segment(const FreeListKey& key, void* ptr, size_t bytes) {
  FreeList& list = lists_[key];
  std::unique_ptr<Block> block = new_block(list);
  segments_.insert(block.get());
  block->ptr = static_cast<char*>(ptr);
  block->size = bytes;
  block->stream = key.stream;
  block->pool = key.pool;
  block->list = &list;
  stats_.reserved += bytes;
  stats_.segments++;
  pool_bytes_[key.pool] += bytes;
  insert_free(block.release());
}

// `upper` (the block right after `lower`, free and off its list) joins `lower`.
void BlockPool::absorb(Block* lower, Block* upper) noexcept {
  lower->size += upper->size;
  lower->next = upper->next;
  if (upper->next) upper->next->prev = lower;
  delete upper;
  stats_.merges++;
}

void BlockPool::give_back(Block* block) noexcept {
  block->uses = 0;
  if (block->prev && block->prev->free) {  // the lower block absorbs this one
    Block* prev = block->prev;
    erase_free(prev);
    absorb(prev, block);
    block = prev;
  }
  if (block->next && block->next->free) {
    erase_free(block->next);
    absorb(block, block->next);
  }
  insert_free(block);
}

size_t BlockPool::release_free_segments(const RawMemory& raw, int device, uint64_t pool) noexcept {
  size_t released = 0;
  for (auto& [key, list] : lists_)
    for (auto it = list.begin(); key.pool == pool && it != list.end();) {
      Block* block = *it++;
      if (!block->whole_segment()) continue;
      erase_free(block);
      segments_.erase(block);
      raw.release(block->ptr, device);
      released += block->size;
      pool_bytes_.find(pool)->second -= block->size;  // add_segment made the entry
      stats_.reserved -= block->size;
      stats_.segments--;
      delete block;
    }
  return released;
}

void BlockPool::move_pool(uint64_t from, uint64_t to) {
  std::map<const FreeList*, FreeList*> target;
  for (auto& [key, list] : lists_)
    if (key.pool == from) target[&list] = &lists_[{to, key.stream, key.small}];
  for (Block* first : segments_) {
    auto moved = target.find(first->list);
    if (moved == target.end()) continue;
    for (Block* b = first; b; b = b->next) {
      const bool was_free = b->free;
      if (was_free) erase_free(b);
      b->list = moved->second;
      b->pool = to;
      if (was_free) insert_free(b);
    }
  }
  std::erase_if(lists_, [from](const auto& entry) { return entry.first.pool == from; });
  if (auto bytes = pool_bytes_.extract(from); !bytes.empty()) pool_bytes_[to] += bytes.mapped();
}

size_t BlockPool::pool_reserved(uint64_t pool) const {
  const auto bytes = pool_bytes_.find(pool);
  return bytes == pool_bytes_.end() ? 0 : bytes->second;
}

BlockPoolStats BlockPool::stats() const {
  BlockPoolStats s = stats_;
  for (const auto& [key, list] : lists_)
    if (!list.empty()) s.largest_free = std::max(s.largest_free, (*list.rbegin())->size);
  return s;
}

}  // namespace rg::gpu
