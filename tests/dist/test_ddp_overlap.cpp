// DDP that overlaps on device streams, on sim's delayed-stream mode, with two ranks (threads,
// sim:0 and sim:1) over a transport whose messages complete on the communication stream
// (tests/dist/sim_stream_transport.h). sim counts, per device, every time its compute stream
// is made to wait for communication (kernels/sim/stream_queue.h). The model is a chain
// y = x * w0 * w1 * w2 * w3, so backward produces w3's gradient first and w0's last, and
// every parameter has a bucket of its own. A hook on w0 (the last gradient) pauses backward
// there, before the reducer's finalize, and checks:
//   - bucket 0's communication has already run (both its ring messages were received and
//     copied on the communication stream) while backward is still going;
//   - the compute stream has not waited for any communication: no backward kernel queued
//     so far, or later, is ordered after communication work;
// and after backward: the compute stream waited for communication exactly once (the
// finalize), the averaged gradients are right, the step took at most one host
// synchronization (the loss read), and the reducer's hidden share comes from device events. A plain
// all-reduce's wait() orders the caller's stream after the collective (one compute wait, no host
// synchronization), as in PyTorch.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "autograd/hooks.h"
#include "dist/process_group.h"
#include "kernels/cuda/device_errors.h"
#include "kernels/sim/stream_queue.h"
#include "nn/reducer.h"
#include "ops/ops.h"
#include "tests/dist/sim_stream_transport.h"

using namespace rg;

namespace {

constexpr int kWorld = 2;
constexpr int kParams = 4;
constexpr int64_t kWidth = 1024;
constexpr int kSteps = 3;

// Both ranks' hooks meet here before either finalizes.
struct Meeting {
  std::atomic<int> arrived{0};
  void meet(int step) {
    arrived.fetch_add(1);
    while (arrived.load() < kWorld * (step + 1)) std::this_thread::yield();
  }
};

// What one rank saw in its last step.
struct Seen {
  bool comm_ran_during_backward = false;
  uint64_t waits_during_backward = 0;  // compute waits on communication before the finalize
  uint64_t waits_in_step = 0;
  uint64_t host_syncs_in_step = 0;
  std::vector<float> grads;  // first element of each averaged gradient
  bool rebuilt = false;      // the buckets were rebuilt (rank 0's order, broadcast on sim)
  std::string clock;         // what the last step's hidden share was measured by
  double hidden_seconds = 0;
  double comm_seconds = 0;
};

double weight(int k) { return 1.0 + 0.5 * k; }

dist::Options options() {
  dist::Options o;
  o.timeout = std::chrono::milliseconds(20000);
  o.direct_bytes = 64;  // the buckets take the ring
  return o;
}

uint64_t delivered(test::SimWire& wire, int rank) {
  std::lock_guard lock(wire.mu);
  return wire.delivered[rank];
}

// Waits (up to 20 s) until `rank` has received `count` messages more than `before`.
bool wait_for_delivery(test::SimWire& wire, int rank, uint64_t before, uint64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (delivered(wire, rank) >= before + count) return true;
    std::this_thread::yield();
  }
  return false;
}

void run_rank(int rank, std::shared_ptr<test::SimWire> wire, Meeting& meeting, Seen& seen) {
  const Device device(DeviceType::sim, rank);
  auto transport =
      std::make_unique<test::SimStreamTransport>(wire, rank, kWorld, options().timeout);
  dist::ProcessGroup group(rank, kWorld, options(), std::move(transport));
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (int k = 0; k < kParams; ++k) {
    params.push_back(full({kWidth}, weight(k), DType::f32, device).requires_grad_(true));
    names.push_back(str("w", k));
  }
  nn::ReducerOptions ro;
  ro.first_bucket_cap_bytes = ro.bucket_cap_bytes = kWidth * sizeof(float);
  nn::Reducer reducer(params, names, group, ro);
  int step = 0;
  uint64_t waits_at_start = 0, delivered_at_start = 0;
  register_post_accumulate_grad_hook(params[0], [&](const Tensor&) {
    // Bucket 0's ring: 2 messages received, each copied on the communication stream.
    seen.comm_ran_during_backward = wait_for_delivery(*wire, rank, delivered_at_start, 2);
    seen.waits_during_backward = sim::waits_on_comm(rank) - waits_at_start;
    meeting.meet(step);
  });
  Tensor x = full({kWidth}, rank + 1.0, DType::f32, device);
  for (step = 0; step < kSteps; ++step) {
    for (Tensor& p : params) p.set_grad(Tensor());
    waits_at_start = sim::waits_on_comm(rank);
    delivered_at_start = delivered(*wire, rank);
    const uint64_t syncs_at_start = gpu::host_syncs(device);
    Tensor y = x;
    for (const Tensor& p : params) y = y * p;
    Tensor loss = sum(y);
    loss.backward();
    (void)loss.item();
    seen.host_syncs_in_step = gpu::host_syncs(device) - syncs_at_start;
    seen.clock = reducer.stats().clock;  // the loss read completed the step's events
    seen.hidden_seconds = reducer.stats().hidden_seconds;
    seen.comm_seconds = reducer.stats().comm_seconds;
    seen.waits_in_step = sim::waits_on_comm(rank) - waits_at_start;
  }
  for (const Tensor& p : params) seen.grads.push_back(p.grad().to(kCPU).data<float>()[0]);
  seen.rebuilt = reducer.buckets_rebuilt();
}

}  // namespace

TEST_CASE("ddp overlap on device streams: backward never waits for communication") {
  sim::DelayedStreamsScope delayed;
  auto wire = std::make_shared<test::SimWire>(kWorld);
  Meeting meeting;
  Seen seen[kWorld];
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r)
    ranks.emplace_back([&, r] { run_rank(r, wire, meeting, seen[r]); });
  for (auto& t : ranks) t.join();
  double product = 1;
  for (int k = 0; k < kParams; ++k) product *= weight(k);
  for (int r = 0; r < kWorld; ++r) {
    CAPTURE(r);
    CHECK(seen[r].comm_ran_during_backward);
    CHECK(seen[r].waits_during_backward == 0);
    CHECK(seen[r].waits_in_step == 1);
    CHECK(seen[r].host_syncs_in_step <= 1);
    CHECK(seen[r].rebuilt);
    // Measured by device events: bucket 0's collective began on the communication stream
    // while backward was paused in the hook, so part of it precedes backward's end event.
    CHECK(seen[r].clock == "device events");
    CHECK(seen[r].hidden_seconds > 0);
    CHECK(seen[r].hidden_seconds <= seen[r].comm_seconds);
    REQUIRE(seen[r].grads.size() == kParams);
    for (int k = 0; k < kParams; ++k)  // d sum(x prod w) / d w_k, averaged over x = 1, 2
      CHECK(seen[r].grads[k] == doctest::Approx(1.5 * product / weight(k)));
  }
}

TEST_CASE("device-stream collective: wait orders the caller's stream, not the host") {
  sim::DelayedStreamsScope delayed;
  auto wire = std::make_shared<test::SimWire>(kWorld);
  float got[kWorld] = {};
  uint64_t waits[kWorld] = {}, syncs[kWorld] = {};
  bool incomplete_after_wait[kWorld] = {};
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r)
    ranks.emplace_back([&, r] {
      const Device device(DeviceType::sim, r);
      dist::ProcessGroup group(
          r, kWorld, options(),
          std::make_unique<test::SimStreamTransport>(wire, r, kWorld, options().timeout));
      Tensor t = full({kWidth}, r + 1.0, DType::f32, device);
      const uint64_t waits_before = sim::waits_on_comm(r), syncs_before = gpu::host_syncs(device);
      auto work = group.allreduce(t);
      work->wait();  // the host waits until it is queued; compute waits for its event
      waits[r] = sim::waits_on_comm(r) - waits_before;
      syncs[r] = gpu::host_syncs(device) - syncs_before;
      got[r] = *static_cast<const float*>(t.data_ptr());  // no synchronization: raw bytes
      incomplete_after_wait[r] = !work->is_completed();
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kWorld; ++r) {
    CAPTURE(r);
    CHECK(got[r] == 3.0f);
    CHECK(waits[r] == 1);
    CHECK(syncs[r] == 0);
    CHECK_FALSE(incomplete_after_wait[r]);  // the wait ran the stream that far
  }
}
