// The nccl backend's stream hand-offs (dist/stream_messages.h), run on sim's delayed-stream
// mode, where work on the communication stream waits in a queue as on a GPU: a message's
// consumer sees its bytes only through the hand-back (without it, the old ones: the mode
// exposes the bug), nothing waits on the host before the collective's end, and the end's
// watch names the peer of a message that is not done by the deadline.
#include <doctest/doctest.h>

#include "dist/stream_messages.h"
#include "kernels/builtin.h"
#include "kernels/sim/stream_queue.h"
#include "ops/ops.h"

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
