// What a block of device memory holds, for the memory report (rg::memory_stats): every
// storage is counted under one category, and the categories add up to the allocator's
// `allocated` bytes. A storage is born in the category of the innermost MemoryCategoryScope
// on its thread (`other` outside any), and layers above re-tag it when they learn more: a
// module's parameter, a leaf's .grad, a tensor saved for backward (see core/memory_accounting.h).
#pragma once
#include <cstdint>

namespace rg {

// Listed from the most to the least specific: a re-tag only moves a storage up this list, so
// a weight saved for backward stays a parameter, and a .grad that views a bucket counts as a
// gradient.
enum class MemoryCategory : uint8_t {
  parameters,
  buffers,  // a module's non-parameter state (the causal mask)
  gradients,
  optimizer_state,
  buckets,      // communication buckets (DDP)
  activations,  // tensors saved for backward
  other,        // everything else: inputs, temporaries, outputs not saved
};
inline constexpr int kMemoryCategories = 7;

const char* memory_category_name(MemoryCategory category);

// Storages allocated on this thread while a scope lives are born in `category`.
class MemoryCategoryScope {
 public:
  explicit MemoryCategoryScope(MemoryCategory category);
  ~MemoryCategoryScope();
  MemoryCategoryScope(const MemoryCategoryScope&) = delete;
  MemoryCategoryScope& operator=(const MemoryCategoryScope&) = delete;

 private:
  MemoryCategory previous_;
};

MemoryCategory current_memory_category();

}  // namespace rg
