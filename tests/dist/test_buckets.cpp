// The transport under DDP without autograd: the collectives' local arithmetic through the
// kernel table on host-memory devices (cpu, sim), the bucket plan, BucketTransport's
// in-order launches and waits on a threads group, and its device-event figures when the
// collectives run on device streams (sim's delayed communication stream).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dist/bucket_transport.h"
#include "dist/buffer_math.h"
#include "dist/stream_work.h"
#include "dist/threads_group.h"
#include "kernels/builtin.h"
#include "kernels/sim/stream_queue.h"
#include "ops/ops.h"

using namespace rg;
using namespace rg::dist;

namespace {

Tensor filled(const std::vector<float>& values, Device device, DType dtype = DType::f32) {
  Tensor host = empty({static_cast<int64_t>(values.size())}, DType::f32);
  std::copy(values.begin(), values.end(), host.data<float>());
  Tensor same = empty(host.shape(), DType::f32, device);
  copy_buffer(same, host);  // across devices: bytes
  if (dtype == DType::f32) return same;
  Tensor t = empty(host.shape(), dtype, device);
  copy_buffer(t, same);  // on the device: a converting copy
  return t;
}

}  // namespace

TEST_CASE("buffer_math: sum, max (NaN wins), average and conversions on cpu and sim") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::string name : {"cpu", "sim"}) {
    CAPTURE(name);
    Device d = Device::parse(name);
    Tensor acc = filled({1, -2, 3.5f}, d);
    reduce_into(acc, filled({2, 5, 0.5f}, d), CombineOp::sum);
    CHECK(acc.to_vector<float>() == std::vector<float>{3, 3, 4});
    reduce_into(acc, filled({nan, 7, -1}, d), CombineOp::max);
    std::vector<float> m = acc.to_vector<float>();
    CHECK(std::isnan(m[0]));
    CHECK(m[1] == 7);
    CHECK(m[2] == 4);
    Tensor avg = filled({3, 6, -9}, d);
    divide_by(avg, 3);
    CHECK(avg.to_vector<float>() == std::vector<float>{1, 2, -3});
    Tensor half = filled({1.5f, -2.25f, 1000}, d, DType::bf16);  // converting copy f32 -> bf16
    CHECK(half.dtype() == DType::bf16);
    Tensor back = empty({3}, DType::f32, d);
    copy_buffer(back, half);
    CHECK(back.to_vector<float>() == std::vector<float>{1.5f, -2.25f, 1000});
    CHECK_THROWS_WITH_AS(reduce_into(acc, filled({1, 2, 3}, d, DType::f64), CombineOp::sum),
                         doctest::Contains("reduce_into: dtypes float32 and float64"), Error);
    CHECK_THROWS_WITH_AS(divide_by(empty({2}, DType::i32, d), 2),
                         doctest::Contains("divide_by: unsupported dtype int32"), Error);
  }
}

TEST_CASE("plan_buckets: in order, per dtype, closed at the caps (the first one smaller)") {
  std::vector<Tensor> members{empty({4}), empty({4}), empty({4}, DType::f64), empty({8}),
                              empty({2})};  // 16, 16, 32, 32, 8 bytes
  auto layout = plan_buckets(members, {4, 3, 2, 1, 0}, 8, 40);
  // 4 fills the first bucket (8 >= 8); 3 and 1 share f32 (32 + 16 >= 40); 2 (f64) and 0 stay open.
  REQUIRE(layout.size() == 4);
  CHECK(layout[0] == std::vector<size_t>{4});
  CHECK(layout[1] == std::vector<size_t>{3, 1});
}

TEST_CASE("plan_buckets: a member of at least alone_bytes gets a bucket of its own, in order") {
  std::vector<Tensor> members{empty({4}), empty({64}), empty({4}), empty({32}, DType::f64),
                              empty({4})};  // 16, 256, 16, 256 (f64), 16 bytes
  auto layout = plan_buckets(members, {4, 3, 2, 1, 0}, 1000, 1000, 256);
  // 4 opens a bucket; 3 (alone) leaves it open (another dtype); 2 joins 4; 1 (alone) closes
  // that bucket first; 0 is left over.
  REQUIRE(layout.size() == 4);
  CHECK(layout[0] == std::vector<size_t>{3});
  CHECK(layout[1] == std::vector<size_t>{4, 2});
  CHECK(layout[2] == std::vector<size_t>{1});
  CHECK(layout[3] == std::vector<size_t>{0});
  // Without alone_bytes, the caps alone decide.
  CHECK(plan_buckets(members, {4, 3, 2, 1, 0}, 1000, 1000).size() == 2);
}

TEST_CASE("BucketTransport: a lent tensor is reduced in place of the buffer, then given back") {
  CHECK_NOTHROW(run_threads(2, [](ProcessGroup& pg) {
    const int r = pg.rank();
    std::vector<Tensor> members{empty({3})};
    BucketTransport transport(pg, allreduce_hook, nullptr);
    transport.assign(members, {{0}});
    const Tensor own = transport.buffer(0);
    Tensor lent = full({3}, double(r + 1));
    bool refused = false;
    try {
      transport.adopt_buffer(0, empty({4}));
    } catch (const Error& e) {
      refused = std::string(e.what()).find("a tensor of 4 elements") != std::string::npos;
    }
    RG_CHECK(refused, "a tensor of another size is refused, named");
    transport.adopt_buffer(0, lent);
    RG_CHECK(transport.adopted(0) && transport.slot(0).data_ptr() == lent.data_ptr(), "lent");
    RG_CHECK(transport.mark_filled(0), "complete");
    transport.launch_ready();
    auto now = BucketTransport::Clock::now();
    transport.wait_all(now, now);
    RG_CHECK(lent.to_vector<float>() == std::vector<float>(3, 3.0f), "sum in the lent tensor");
    RG_CHECK(transport.stats().buffers_lent == 1, "counted");
    transport.release_adopted(0);
    RG_CHECK(!transport.adopted(0) && transport.buffer(0).data_ptr() == own.data_ptr(), "back");
    transport.adopt_buffer(0, lent);
    transport.reset();  // a round given up half-way gives the lent tensor back too
    RG_CHECK(!transport.adopted(0) && transport.buffer(0).data_ptr() == own.data_ptr(), "reset");
  }));
}

TEST_CASE("BucketTransport: slots, launches strictly in bucket order, averaged results") {
  CHECK_NOTHROW(run_threads(2, [](ProcessGroup& pg) {
    const int r = pg.rank();
    std::vector<Tensor> members{empty({2}), empty({3}), empty({1})};
    BucketTransport transport(pg, allreduce_hook, nullptr);
    transport.assign(members, {{2}, {1, 0}});
    RG_CHECK(transport.bucket_count() == 2, "two buckets");
    RG_CHECK(transport.slot(0).numel() == 2 && transport.slot(1).numel() == 3, "slot sizes");
    // Bucket 1 completes first, but must not launch before bucket 0.
    for (size_t i : {1, 0}) {
      Tensor s = transport.slot(i);
      for (int64_t k = 0; k < s.numel(); ++k) s.data<float>()[k] = float(r + 1);
    }
    RG_CHECK(!transport.mark_filled(1), "bucket 1 still waits for member 0");
    RG_CHECK(transport.mark_filled(0), "member 0 completes bucket 1");
    transport.launch_ready();
    RG_CHECK(transport.stats().buckets_launched == 0, "bucket 1 launched before bucket 0");
    transport.slot(2).data<float>()[0] = 10.0f * (r + 1);
    RG_CHECK(transport.mark_filled(2), "member 2 completes bucket 0");
    transport.launch_ready();
    RG_CHECK(transport.all_launched() && transport.stats().buckets_launched == 2, "launched");
    auto now = BucketTransport::Clock::now();
    transport.wait_all(now, now);
    const std::vector<float> summed{3, 3};
    RG_CHECK(transport.slot(0).to_vector<float>() == summed, "sum of ranks");
    RG_CHECK(transport.slot(2).item() == 30.0, "sum of ranks");
    transport.reset();
    RG_CHECK(!transport.all_launched(), "reset: nothing launched");
    RG_CHECK(transport.mark_filled(2), "reset: member 2 completes bucket 0 again");
  }));
}

namespace {

// A bucket's "collective" on sim's delayed communication stream, as on a GPU: queued there
// between its started and done timing events, and run only when a stream waits for it.
std::shared_ptr<Work> queued_on_comm_hook(ProcessGroup&, const Tensor& bucket) {
  const Device device = bucket.device();
  const gpu::Stream comm = gpu::comm_stream(device);
  auto work = std::make_shared<StreamWork>(device);
  auto started = std::make_shared<gpu::Event>(device, true);
  auto done = std::make_shared<gpu::Event>(device, true);
  started->record(comm);
  {
    gpu::StreamGuard on_comm(comm);
    kernel_table(DeviceType::sim).fill(bucket, 2.0);
  }
  done->record(comm);
  work->set_started(started);
  work->set_done(done);
  work->finish();  // queued: wait() orders the waiter's stream
  return work;
}

// Two buckets of one member each: bucket 0 launched during "backward", bucket 1 at its end.
// `drain_during_backward`: the communication stream runs bucket 0 before backward ends.
BucketStats round_on_device_streams(ProcessGroup& pg, bool drain_during_backward) {
  const Device device(DeviceType::sim, 0);
  std::vector<Tensor> members{empty({4096}, DType::f32, device), empty({4096}, DType::f32, device)};
  BucketTransport transport(pg, queued_on_comm_hook, nullptr);
  transport.assign(members, {{0}, {1}});
  const auto started = BucketTransport::Clock::now();
  transport.mark_filled(0);
  transport.launch_ready();
  if (drain_during_backward) gpu::synchronize(gpu::comm_stream(device));
  Tensor backward_work = empty({1 << 16}, DType::f32, device);
  kernel_table(DeviceType::sim).fill(backward_work, 1.0);  // on the compute stream, now
  transport.mark_filled(1);
  transport.mark_backward_end();
  const auto ended = BucketTransport::Clock::now();
  transport.launch_ready();
  transport.wait_all(started, ended);  // compute waits for comm: sim runs the queue now
  synchronize(device);
  RG_CHECK(transport.slot(0).to_vector<float>()[0] == 2.0f, "the collective ran");
  return transport.stats();
}

}  // namespace

TEST_CASE("BucketTransport on device streams: the hidden share is measured by device events") {
  // The host launches a bucket during backward, but the device communicates later: the
  // host's clock (launch to the end of backward) would call that communication hidden.
  sim::DelayedStreamsScope delayed;
  BucketStats late, early;
  CHECK_NOTHROW(run_threads(1, [&](ProcessGroup& pg) {
    late = round_on_device_streams(pg, false);
    early = round_on_device_streams(pg, true);
  }));
  CHECK(std::string(late.clock) == "device events");
  CHECK(late.comm_seconds > 0);
  CHECK(late.hidden_seconds == 0);  // every collective ran after backward's end event
  CHECK(std::string(early.clock) == "device events");
  CHECK(early.hidden_seconds > 0);                   // bucket 0's collective ran before it
  CHECK(early.hidden_seconds < early.comm_seconds);  // bucket 1's after
}
