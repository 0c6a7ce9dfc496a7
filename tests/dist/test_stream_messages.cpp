// The nccl backend's stream hand-offs (dist/stream_messages.h), run on sim's delayed-stream
// mode, where work on the communication stream waits in a queue as on a GPU: a message's
// consumer sees its bytes only through the hand-back (without it, the old ones: the mode
// exposes the bug), nothing waits on the host before the collective's end, and the end's
// watch names the peer of a message that is not done by the deadline. The watchdog does the
// same off the critical path: handing it messages returns at once, and it names the peer.
#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>

#include "dist/stream_messages.h"
#include "dist/stream_watchdog.h"
#include "kernels/builtin.h"
#include "kernels/sim/stream_queue.h"
#include "ops/ops.h"
#include "tests/sim_fault.h"

using namespace rg;
using namespace rg::dist;

namespace {

const Device kSim(DeviceType::sim);

float first(const Tensor& t) { return *static_cast<const float*>(t.data_ptr()); }  // no sync

// A "receive": the communication stream writes `value` into t, later.
void receive_later(const StreamMessages& messages, const Tensor& t, double value) {
  gpu::StreamGuard on_comm(messages.comm());
  kernel_table(DeviceType::sim).fill(t, value);
}

Envelope envelope(uint64_t seq) {
  Envelope env;
  env.kind = Collective::allreduce;
  env.seq = seq;
  env.count = 1000;
  return env;
}

}  // namespace

TEST_CASE("stream messages: the consumer waits for the message's event, the host does not") {
  sim::DelayedStreamsScope delayed;
  StreamMessages messages(gpu::comm_stream(kSim));
  Tensor unhanded = zeros({1000}, DType::f32, kSim);
  Tensor handed = zeros({1000}, DType::f32, kSim);

  receive_later(messages, unhanded, 3.0);
  auto unhanded_done = messages.completion();
  messages.wait_for_producers();  // before a send: a device-side wait, no host synchronization
  CHECK_FALSE(unhanded_done->query());
  CHECK(first(unhanded) == 0.0f);  // read without the hand-back: the bytes are not there yet

  receive_later(messages, handed, 4.0);
  auto done = messages.completion();
  messages.hand_back(done, 1, envelope(7));  // the compute stream waits for it
  CHECK(first(handed) == 4.0f);
  CHECK(messages.pending() == 1);
  CHECK_FALSE(messages.watch(Clock::now(), nullptr).has_value());  // all done: nobody late
  CHECK(messages.pending() == 0);
  gpu::synchronize(messages.comm());
}

TEST_CASE("stream messages: the end of a collective names the peer of a message not done") {
  sim::DelayedStreamsScope delayed;
  StreamMessages messages(gpu::comm_stream(kSim));
  Tensor t = zeros({1000}, DType::f32, kSim);
  receive_later(messages, t, 2.0);
  auto done = messages.completion();
  {
    // Consumed on the communication stream itself: nothing runs it before the watch.
    gpu::StreamGuard on_comm(messages.comm());
    messages.hand_back(done, 3, envelope(9));
  }
  int checks = 0;
  const auto late = messages.watch(Clock::now() + std::chrono::milliseconds(20), [&] { ++checks; });
  REQUIRE(late.has_value());
  CHECK(late->peer == 3);
  CHECK(late->env.seq == 9);
  CHECK(checks > 0);  // the backend's error check ran while it waited
  CHECK(messages.pending() == 0);
  gpu::synchronize(messages.comm());
  CHECK(first(t) == 2.0f);
  CHECK_THROWS_WITH(messages.hand_back(nullptr, 0, envelope(1)),
                    doctest::Contains("whose batch has not ended"));
}

namespace {
// What a watchdog reported, for the test to wait on.
struct Reported {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<StreamMessages::Late> late;
  std::string error;
  StreamWatchdog::OnLate callback() {
    return [this](const StreamMessages::Late& l, const std::string& e) {
      std::lock_guard lock(mu);
      late = l;
      error = e;
      cv.notify_all();
    };
  }
  bool wait() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return late.has_value(); });
  }
};

void hand_back_on_comm(StreamMessages& messages, const Tensor& t, int peer, uint64_t seq) {
  receive_later(messages, t, 1.0);
  auto done = messages.completion();
  gpu::StreamGuard on_comm(messages.comm());  // consumed on the comm stream: nothing runs it
  messages.hand_back(done, peer, envelope(seq));
}
}  // namespace

TEST_CASE("stream watchdog: passes messages done in time, names the peer of a late one") {
  sim::DelayedStreamsScope delayed;
  StreamMessages messages(gpu::comm_stream(kSim));
  Reported reported;
  StreamWatchdog watchdog(reported.callback());
  Tensor t = zeros({1000}, DType::f32, kSim);
  hand_back_on_comm(messages, t, 2, 4);
  watchdog.watch(messages.take(), Clock::now() + std::chrono::seconds(10));
  CHECK(messages.pending() == 0);
  gpu::synchronize(messages.comm());  // the stream runs: the watchdog sees the message done
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (watchdog.pending() > 0 && Clock::now() < deadline) std::this_thread::yield();
  CHECK(watchdog.pending() == 0);
  CHECK_FALSE(watchdog.fired());

  hand_back_on_comm(messages, t, 3, 9);
  watchdog.watch(messages.take(), Clock::now() + std::chrono::milliseconds(30));  // no wait
  REQUIRE(reported.wait());
  CHECK(reported.late->peer == 3);
  CHECK(reported.late->env.seq == 9);
  CHECK(reported.error.empty());
  CHECK(watchdog.fired());
  gpu::synchronize(messages.comm());
}

TEST_CASE("stream watchdog: the backend's asynchronous error counts as late") {
  sim::DelayedStreamsScope delayed;
  StreamMessages messages(gpu::comm_stream(kSim));
  Reported reported;
  StreamWatchdog watchdog(reported.callback(), [] { RG_FAIL("peer 5 is gone"); });
  Tensor t = zeros({1000}, DType::f32, kSim);
  hand_back_on_comm(messages, t, 5, 11);
  watchdog.watch(messages.take(), Clock::now() + std::chrono::seconds(10));
  REQUIRE(reported.wait());
  CHECK(reported.late->peer == 5);
  CHECK(reported.error.find("peer 5 is gone") != std::string::npos);
  gpu::synchronize(messages.comm());
  CHECK_THROWS_WITH(StreamWatchdog(nullptr), doctest::Contains("on_late is empty"));
}

TEST_CASE("stream watchdog: a sticky device error fails the watch naming the peer") {
  // On cuda a fault makes every later cudaEventQuery fail: the watchdog's poll must report
  // it as the collective's failure, not let it escape its thread (std::terminate).
  const Device device(DeviceType::sim, 3);
  sim::DelayedStreamsScope delayed;
  test::ClearStickyError clear{device.index};  // before the scope drains the queue
  StreamMessages messages(gpu::comm_stream(device));
  Reported reported;
  StreamWatchdog watchdog(reported.callback());
  Tensor t = zeros({1000}, DType::f32, device);
  hand_back_on_comm(messages, t, 6, 13);  // not done: the communication stream waits
  CHECK(test::fault_device(device).find("__trap()") != std::string::npos);
  watchdog.watch(messages.take(), Clock::now() + std::chrono::seconds(10));
  REQUIRE(reported.wait());
  CHECK(reported.late->peer == 6);
  CHECK(reported.late->env.seq == 13);
  CHECK(reported.error.find("cudaEventQuery on sim:3 failed") != std::string::npos);
  CHECK(reported.error.find("cudaErrorLaunchFailure") != std::string::npos);
  CHECK(watchdog.fired());
}
