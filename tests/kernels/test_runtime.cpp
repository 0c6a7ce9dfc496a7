// The device runtime of sim/cuda: caching allocator (reuse without system allocations,
// per-stream pools, stats, empty_cache, the memory cap's clear OOM error), streams and
// events, pinned host memory and asynchronous copies.
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/stream.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

GPU_KERNEL_TEST(allocator_reuses_freed_blocks_without_system_allocations) {
  empty_cache(device);
  { Tensor warm = empty({1 << 16}, DType::f32, device); }
  uint64_t before = memory_stats(device).system_allocs;
  for (int i = 0; i < 10; ++i) Tensor t = empty({1 << 16}, DType::f32, device);
  CHECK(memory_stats(device).system_allocs == before);
  AllocatorStats s = memory_stats(device);
  CHECK(s.reserved >= s.allocated);
  CHECK(s.peak_allocated >= size_t(1 << 18));
  empty_cache(device);
  // Only whole free segments go back: what stays is in use, or free beside blocks in use.
  AllocatorStats after = memory_stats(device);
  CHECK(after.reserved == after.active + after.inactive_split);
  CHECK(after.active >= after.allocated);
}

GPU_KERNEL_TEST(allocator_keeps_a_pool_per_stream) {
  empty_cache(device);
  { Tensor t = empty({4096}, DType::f32, device); }  // freed into the compute stream's pool
  uint64_t before = memory_stats(device).system_allocs;
  {
    gpu::StreamGuard guard(gpu::comm_stream(device));
    Tensor t = empty({4096}, DType::f32, device);  // the comm stream may not take it
  }
  CHECK(memory_stats(device).system_allocs == before + 1);
}

GPU_KERNEL_TEST(memory_cap_gives_a_clear_out_of_memory_error) {
  size_t total = gpu::total_memory(device);
  gpu::set_memory_fraction(device, double(64 << 20) / double(total));  // 64 MiB
  CHECK_THROWS_WITH_AS(empty({int64_t(100) << 20}, DType::f32, device),
                       doctest::Contains("out of memory: tried to allocate 419430400 bytes"),
                       Error);
  Tensor small = empty({1 << 20}, DType::f32, device);  // 4 MiB still fits
  gpu::set_memory_fraction(device, 1.0);
  CHECK_THROWS_AS(gpu::set_memory_fraction(device, 0.0), Error);
}

GPU_KERNEL_TEST(events_order_the_compute_and_comm_streams) {
  Tensor a = empty({1 << 12}, DType::f32, device);
  kernels_of(device).fill(a, 2.0);
  gpu::Event ready(device, true);
  ready.record(gpu::compute_stream(device));
  ready.wait(gpu::comm_stream(device));
  Tensor b = empty({1 << 12}, DType::f32, device);
  {
    gpu::StreamGuard guard(gpu::comm_stream(device));
    CHECK(gpu::current_stream(device).handle == gpu::comm_stream(device).handle);
    kernels_of(device).unary(UnaryOp::square, b, a);
  }
  CHECK(gpu::current_stream(device).handle == gpu::compute_stream(device).handle);
  gpu::Event done(device, true);
  done.record(gpu::comm_stream(device));
  done.synchronize();
  CHECK(done.query());
  CHECK(ready.elapsed_ms(done) >= 0);
  for (double v : values(b)) REQUIRE(v == 4.0);
}

GPU_KERNEL_TEST(pinned_memory_round_trips_through_async_copies) {
  Tensor host = gpu::empty_pinned({1025}, DType::f32);
  CHECK(host.device().is_cpu());
  for (int64_t i = 0; i < 1025; ++i) host.data<float>()[i] = float(i);
  Tensor dev = empty({1025}, DType::f32, device);
  gpu::copy_async(dev, host);
  Tensor back = gpu::empty_pinned({1025}, DType::f32);
  gpu::copy_async(back, dev);
  gpu::synchronize(gpu::current_stream(device));
  for (int64_t i = 0; i < 1025; ++i) REQUIRE(back.data<float>()[i] == float(i));
}

TEST_CASE("block sizes round requests up to 512 bytes") {
  using gpu::CachingAllocator;
  CHECK(CachingAllocator::size_class(0) == 512);
  CHECK(CachingAllocator::size_class(1) == 512);
  CHECK(CachingAllocator::size_class(513) == 1024);
  CHECK(CachingAllocator::size_class((size_t(3) << 20) + 1) == (size_t(3) << 20) + 512);
}
