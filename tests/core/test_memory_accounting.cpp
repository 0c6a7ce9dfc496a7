// The memory report's counters (core/memory_accounting.h): a storage is counted once, in the
// category of the scope it was born in; re-tags only move it towards the more specific; the
// categories add up exactly to the allocator's `allocated`; a reset restarts the peaks.
#include <doctest/doctest.h>

#include "core/device_interface.h"
#include "core/tensor.h"

namespace rg {
namespace {

size_t block_of(size_t nbytes) { return device_interface(DeviceType::cpu).block_bytes(nbytes); }

void check_sum_is_allocated() {
  AllocatorStats s = memory_stats(kCPU);
  size_t sum = 0;
  for (size_t bytes : s.categories.current) sum += bytes;
  CHECK(sum == s.categories.total);
  CHECK(s.categories.total == s.allocated);
}

TEST_CASE("memory categories: born in the scope's category, counted in block bytes") {
  const MemoryCategoryStats before = memory_stats(kCPU).categories;
  Tensor a = empty({1000}, DType::f32);  // 4000 bytes
  Tensor b;
  {
    MemoryCategoryScope scope(MemoryCategory::optimizer_state);
    CHECK(current_memory_category() == MemoryCategory::optimizer_state);
    b = empty({3, 7}, DType::f64);  // 168 bytes
  }
  CHECK(current_memory_category() == MemoryCategory::other);
  const MemoryCategoryStats now = memory_stats(kCPU).categories;
  CHECK(now.at(MemoryCategory::other) - before.at(MemoryCategory::other) == block_of(4000));
  CHECK(now.at(MemoryCategory::optimizer_state) - before.at(MemoryCategory::optimizer_state) ==
        block_of(168));
  CHECK(block_of(4000) == 4032);  // the cpu allocator's 64-byte classes
  check_sum_is_allocated();
  b = Tensor();
  CHECK(memory_stats(kCPU).categories.at(MemoryCategory::optimizer_state) ==
        before.at(MemoryCategory::optimizer_state));
  check_sum_is_allocated();
}

TEST_CASE("memory categories: a re-tag moves the bytes only towards the more specific") {
  Tensor t = empty({256}, DType::f32);
  const size_t bytes = block_of(1024);
  const MemoryCategoryStats before = memory_stats(kCPU).categories;
  tag_memory(*t.storage(), MemoryCategory::activations);
  tag_memory(*t.view({16, 16}).storage(), MemoryCategory::parameters);  // a view: same block
  tag_memory(*t.storage(), MemoryCategory::activations);                // no step back
  const MemoryCategoryStats now = memory_stats(kCPU).categories;
  CHECK(now.at(MemoryCategory::parameters) == before.at(MemoryCategory::parameters) + bytes);
  CHECK(now.at(MemoryCategory::other) == before.at(MemoryCategory::other) - bytes);
  CHECK(now.at(MemoryCategory::activations) == before.at(MemoryCategory::activations));
  CHECK(now.total == before.total);
  check_sum_is_allocated();
}

TEST_CASE("memory categories: a reset starts a phase, peaks are per category and in total") {
  reset_peak_memory_stats(kCPU);
  const MemoryCategoryStats start = memory_stats(kCPU).categories;
  CHECK(start.peak == start.current);
  CHECK(start.peak_total == start.total);
  {
    MemoryCategoryScope scope(MemoryCategory::activations);
    Tensor big = empty({1 << 16}, DType::f32);
  }
  const MemoryCategoryStats after = memory_stats(kCPU).categories;
  CHECK(after.at(MemoryCategory::activations) == start.at(MemoryCategory::activations));
  CHECK(after.peak_of(MemoryCategory::activations) ==
        start.at(MemoryCategory::activations) + block_of(4 << 16));
  CHECK(after.peak_total == start.total + block_of(4 << 16));
  reset_peak_memory_stats(kCPU);
  CHECK(memory_stats(kCPU).categories.peak_of(MemoryCategory::activations) ==
        after.at(MemoryCategory::activations));
  check_sum_is_allocated();
}

TEST_CASE("memory categories: the model state's peak is the peak of the sum, not of the parts") {
  // A parameter freed before a gradient of the same size is made: each category peaks at one
  // block, the sum of their peaks is two, the model state never held more than one.
  reset_peak_memory_stats(kCPU);
  const MemoryCategoryStats start = memory_stats(kCPU).categories;
  CHECK(start.peak_model_state == start.model_state());
  const size_t block = block_of(4 << 16);
  {
    MemoryCategoryScope scope(MemoryCategory::parameters);
    Tensor weight = empty({1 << 16}, DType::f32);
  }
  {
    MemoryCategoryScope scope(MemoryCategory::gradients);
    Tensor grad = empty({1 << 16}, DType::f32);
    MemoryCategoryScope optimizer(MemoryCategory::optimizer_state);
    Tensor moment = empty({1 << 15}, DType::f32);  // with the gradient: the sum's peak
  }
  const MemoryCategoryStats after = memory_stats(kCPU).categories;
  CHECK(after.peak_of(MemoryCategory::parameters) == start.at(MemoryCategory::parameters) + block);
  CHECK(after.peak_of(MemoryCategory::gradients) == start.at(MemoryCategory::gradients) + block);
  CHECK(after.peak_model_state == start.model_state() + block + block_of(4 << 15));
  CHECK(after.model_state() == start.model_state());
  reset_peak_memory_stats(kCPU);
  CHECK(memory_stats(kCPU).categories.peak_model_state == after.model_state());
}

TEST_CASE("memory categories: borrowed memory is not counted") {
  float host[64];
  const MemoryCategoryStats before = memory_stats(kCPU).categories;
  auto storage = borrow_storage(host, sizeof host, kCPU);
  tag_memory(*storage, MemoryCategory::parameters);
  CHECK(memory_stats(kCPU).categories.total == before.total);
  CHECK(memory_stats(kCPU).categories.at(MemoryCategory::parameters) ==
        before.at(MemoryCategory::parameters));
}

}  // namespace
}  // namespace rg
