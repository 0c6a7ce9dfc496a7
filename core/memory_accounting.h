// Bytes per memory category and device, kept beside the caching allocators: the counts are
// charged in the allocator's own block sizes, so on every device their sum equals the
// allocator's `allocated` (every block the allocators hand out belongs to a Storage).
// Peaks are high-water marks since the last reset_peak_memory_stats(), which marks a phase.
#pragma once
#include <array>
#include <cstddef>

#include "core/device.h"
#include "core/memory_category.h"
#include "core/storage.h"

namespace rg {

struct MemoryCategoryStats {
  std::array<size_t, kMemoryCategories> current{};  // bytes now, per MemoryCategory
  std::array<size_t, kMemoryCategories> peak{};     // per category, since the last reset
  size_t total = 0;                                 // sum of `current`
  size_t peak_total = 0;                            // high-water mark of `total` since the reset
  // High-water mark of parameters + gradients + optimizer state together (the model's state,
  // what ZeRO shards), since the reset: the real peak of the sum, which the sum of those three
  // categories' peaks only bounds.
  size_t peak_model_state = 0;
  size_t model_state() const;  // parameters + gradients + optimizer state now
  size_t at(MemoryCategory c) const { return current[static_cast<int>(c)]; }
  size_t peak_of(MemoryCategory c) const { return peak[static_cast<int>(c)]; }
};

MemoryCategoryStats memory_category_stats(Device device);
// Starts a phase: every peak becomes the current value (PyTorch: reset_peak_memory_stats).
void reset_peak_memory_stats(Device device);

// Moves the storage's bytes to `category` when it is more specific than the storage's own
// (see MemoryCategory); does nothing for borrowed memory.
void tag_memory(Storage& storage, MemoryCategory category);

// Swaps the memory two storages own (data, size, release, charged bytes and category), so
// that a Storage object can give its block back and later take a new one while every tensor
// and view of it (autograd's saved tensors included) keeps pointing at the same object: how
// FSDP (nn/fsdp.h) frees gathered parameters and fills them again (PyTorch:
// storage().resize_(0) and back).
void exchange_storage_memory(Storage& a, Storage& b) noexcept;

// For core/device_interface.cpp and Storage: a new block of `charged` bytes, and its release.
void account_allocation(Storage& storage, size_t charged) noexcept;
void account_release(const Storage& storage) noexcept;
// A block held until exit outside any Storage (cuBLAS's workspace), counted as `other`.
void account_process_block(Device device, size_t charged) noexcept;

}  // namespace rg
