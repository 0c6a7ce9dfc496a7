// Memory used on two streams, on sim's delayed-stream mode (kernels/sim/stream_queue.h),
// where work on the communication stream really waits until someone waits for it: events
// order the streams; a device block used on a second stream is reused only after that
// stream's work (record_stream), and a pinned host block only after the async copies that
// use it (also through to(non_blocking)). Each test first shows that the mode exposes the bug
// (without the protection the late work sees the new owner's values), then that the protection
// prevents it.
#include "kernels/cuda/device_errors.h"
#include "kernels/cuda/stream.h"
#include "kernels/sim/stream_queue.h"
#include "ops/ops.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

const Device kSim(DeviceType::sim);

float first(const Tensor& t) { return *static_cast<const float*>(t.data_ptr()); }  // no sync

void fill(const Tensor& t, double v) { kernel_table(DeviceType::sim).fill(t, v); }

// Copies `src` (allocated on the compute stream, holding 3) into a new tensor on the comm
// stream, then drops src and lets compute allocate and fill a same-size tensor with 7.
// Returns the copy's value once the comm stream has run; *reused: compute got src's block.
float copy_then_reuse(bool record, bool* reused) {
  Tensor src = empty({4096}, DType::f32, kSim);
  fill(src, 3.0);
  void* src_block = src.data_ptr();
  const gpu::Stream comm = gpu::comm_stream(kSim);
  Tensor dst;
  {
    gpu::StreamGuard on_comm(comm);
    dst = empty({4096}, DType::f32, kSim);
    kernel_table(DeviceType::sim).copy(dst, src);
  }
  if (record) gpu::record_stream(src, comm);
  src = Tensor();
  Tensor next = empty({4096}, DType::f32, kSim);
  fill(next, 7.0);
  *reused = next.data_ptr() == src_block;
  gpu::synchronize(comm);
  return first(dst);
}

}  // namespace

TEST_CASE("sim delayed streams: comm work waits for a synchronization; events mark it") {
  sim::DelayedStreamsScope delayed;
  Tensor t = empty({1000}, DType::f32, kSim);
  fill(t, 1.0);  // compute: at once
  CHECK(first(t) == 1.0f);
  const gpu::Stream comm = gpu::comm_stream(kSim);
  gpu::Event done(kSim);
  {
    gpu::StreamGuard on_comm(comm);
    fill(t, 2.0);
    done.record(comm);
  }
  CHECK(first(t) == 1.0f);  // still queued
  CHECK_FALSE(done.query());
  done.synchronize();
  CHECK(done.query());
  CHECK(first(t) == 2.0f);
  {
    gpu::StreamGuard on_comm(comm);
    fill(t, 5.0);
  }
  gpu::Event after(kSim);
  after.record(comm);
  after.wait(gpu::compute_stream(kSim));  // compute work from now on sees the fill
  CHECK(first(t) == 5.0f);
}

TEST_CASE("sim delayed streams: record_stream keeps a block from reuse until the stream ran") {
  sim::DelayedStreamsScope delayed;
  empty_cache(kSim);
  bool reused = false;
  CHECK(copy_then_reuse(false, &reused) == 7.0f);  // the race, made visible
  CHECK(reused);
  CHECK(copy_then_reuse(true, &reused) == 3.0f);
  CHECK_FALSE(reused);
}

TEST_CASE("record_stream: a clear error for a tensor on another device than the stream") {
  Tensor t = empty({4}, DType::f32, kSim);
  CHECK_THROWS_WITH_AS(
      gpu::record_stream(t, gpu::comm_stream(Device(DeviceType::sim, 1))),
      doctest::Contains("record_stream: tensor on sim index 0, stream of sim index 1"), rg::Error);
}

TEST_CASE("sim delayed streams: a pinned block is reused only after its async copies ran") {
  sim::DelayedStreamsScope delayed;
  const gpu::Stream comm = gpu::comm_stream(kSim);
  Tensor dev = empty({2048}, DType::f32, kSim);
  Tensor host = gpu::empty_pinned({2048}, DType::f32);
  for (int64_t i = 0; i < 2048; ++i) host.data<float>()[i] = 1.0f;
  void* block = host.data_ptr();
  {
    gpu::StreamGuard on_comm(comm);
    gpu::copy_async(dev, host);  // queued: reads `host` later
  }
  host = Tensor();
  Tensor other = gpu::empty_pinned({2048}, DType::f32);
  CHECK(other.data_ptr() != block);  // the copy may still read it
  for (int64_t i = 0; i < 2048; ++i) other.data<float>()[i] = 2.0f;
  gpu::synchronize(comm);
  for (double v : values(dev)) REQUIRE(v == 1.0);
  Tensor later = gpu::empty_pinned({2048}, DType::f32);
  CHECK(later.data_ptr() == block);  // back in the pool once the copy ran
}

TEST_CASE("to(non_blocking) from pinned memory: no host wait, block held until the copy ran") {
  sim::DelayedStreamsScope delayed;
  const gpu::Stream comm = gpu::comm_stream(kSim);
  Tensor pageable = full({3000}, 5.0, DType::f32);
  Tensor host = pageable.pin_memory();
  CHECK(host.is_pinned());
  CHECK_FALSE(pageable.is_pinned());
  CHECK(host.pin_memory().is_same(host));  // already pinned
  void* block = host.data_ptr();
  Tensor dev;
  const uint64_t syncs = gpu::host_syncs(kSim);
  {
    gpu::StreamGuard on_comm(comm);  // sim's delayed stream: the copy waits in its queue
    dev = host.to(kSim, /*non_blocking=*/true);
  }
  CHECK(gpu::host_syncs(kSim) == syncs);  // queued, not waited for
  host = Tensor();
  Tensor other = gpu::empty_pinned({3000}, DType::f32);
  CHECK(other.data_ptr() != block);  // the pending copy still reads it
  gpu::synchronize(comm);
  CHECK(gpu::host_syncs(kSim) == syncs + 1);
  for (double v : values(dev)) REQUIRE(v == 5.0);
  Tensor later = gpu::empty_pinned({3000}, DType::f32);
  CHECK(later.data_ptr() == block);  // back in the pool once the copy ran
}

TEST_CASE("to(non_blocking) from pageable memory stays synchronous; pin_memory needs the cpu") {
  Tensor pageable = full({16}, 2.0, DType::f32);
  const uint64_t syncs = gpu::host_syncs(kSim);
  Tensor dev = pageable.to(kSim, /*non_blocking=*/true);
  CHECK(gpu::host_syncs(kSim) == syncs + 1);
  for (double v : values(dev)) REQUIRE(v == 2.0);
  CHECK_THROWS_WITH_AS(dev.pin_memory(), doctest::Contains("pin_memory: only cpu tensors"),
                       rg::Error);
}
