// Collectives on device streams (dist/stream_work.h) over the sim-stream test transport
// (tests/dist/sim_stream_transport.h), in sim's delayed-stream mode:
//   - a tensor dropped by its caller right after issuing an all-reduce keeps its block until
//     the communication stream has run the collective (record_stream), so compute's next
//     allocation cannot get it while the queued receive would still write into it (without
//     the record_stream it gets it, and holds the receive's bytes, 8, instead of its own 7 --
//     unless another thread happened to run the queue first);
//   - a barrier's wait holds the host until the stream has run it.
#include <doctest/doctest.h>

#include <thread>

#include "dist/process_group.h"
#include "dist/stream_work.h"
#include "kernels/builtin.h"
#include "kernels/sim/stream_queue.h"
#include "ops/ops.h"
#include "tests/dist/sim_stream_transport.h"

using namespace rg;

namespace {

constexpr int kWorld = 2;

dist::Options options() {
  dist::Options o;
  o.timeout = std::chrono::milliseconds(20000);
  o.direct_bytes = 64;  // the ring
  return o;
}

// What compute's next tensor (filled with 7) holds once the communication stream has run:
// not 7 if it got the dropped tensor's block while the collective's receive was queued.
float drop_after_issue(int rank, std::shared_ptr<test::SimWire> wire) {
  const Device device(DeviceType::sim, rank);
  dist::ProcessGroup group(
      rank, kWorld, options(),
      std::make_unique<test::SimStreamTransport>(wire, rank, kWorld, options().timeout));
  Tensor t = full({4096}, rank + 1.0, DType::f32, device);
  auto work = group.allreduce(t);
  t = Tensor();
  auto& on_stream = dynamic_cast<dist::StreamWork&>(*work);
  on_stream.wait_queued();  // queued, and the collective's own references are gone
  Tensor next = empty({4096}, DType::f32, device);
  kernel_table(DeviceType::sim).fill(next, 7.0);
  gpu::synchronize(gpu::comm_stream(device));
  return *static_cast<const float*>(next.data_ptr());
}

}  // namespace

TEST_CASE("device-stream collective: a dropped tensor's block waits for the communication") {
  sim::DelayedStreamsScope delayed;
  auto wire = std::make_shared<test::SimWire>(kWorld);
  float value[kWorld] = {};
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r)
    ranks.emplace_back([&, r] { value[r] = drop_after_issue(r, wire); });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kWorld; ++r) {
    CAPTURE(r);
    CHECK(value[r] == 7.0f);
  }
}

TEST_CASE("device-stream barrier: its wait holds the host until the stream has run it") {
  sim::DelayedStreamsScope delayed;
  auto wire = std::make_shared<test::SimWire>(kWorld);
  bool completed[kWorld] = {};
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r)
    ranks.emplace_back([&, r] {
      dist::ProcessGroup group(
          r, kWorld, options(),
          std::make_unique<test::SimStreamTransport>(wire, r, kWorld, options().timeout));
      auto work = group.barrier();
      work->wait();
      completed[r] = work->is_completed();
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kWorld; ++r) CHECK(completed[r]);
}
