// CUDA's capture-mode rules on sim (kernels/cuda/capture_rules.h): a potentially unsafe call
// (cudaMalloc, a synchronization, an event query, a synchronous copy) is refused with
// cudaErrorStreamCaptureUnsupported where CUDA refuses it -- by the capture's mode and the
// calling thread's -- and invalidates the capture, whose end then fails. The caching allocator
// takes a new segment for a graph's pool in relaxed mode, as PyTorch's does, and queries no
// event while it fills one.
#include <doctest/doctest.h>

#include <thread>

#include "kernels/builtin.h"
#include "kernels/cuda/graph.h"
#include "kernels/sim/stream_queue.h"
#include "ringgrad.h"
#include "tests/error_of.h"

using namespace rg;
using namespace rg::test;

namespace {

const Device kSim(DeviceType::sim);
const Device kSim1(DeviceType::sim, 1);
const std::string kUnsupported = "cudaErrorStreamCaptureUnsupported";
const std::string kInvalidated = "cudaErrorStreamCaptureInvalidated";

Tensor input(uint64_t seed, const Shape& shape) {
  Generator gen{seed, 0};
  return randn(shape, DType::f32, kSim, &gen);
}

// The message of `fn` run on another thread (in `mode` when given), or "(no error)".
std::string on_other_thread(std::function<void()> fn, const gpu::CaptureMode* mode = nullptr) {
  std::string message;
  std::thread other([&] {
    message = error_of([&] {
      if (mode) gpu::exchange_capture_mode(*mode);
      fn();
    });
  });
  other.join();
  return message;
}

void sync_sim1() { gpu::synchronize(gpu::compute_stream(kSim1)); }

}  // namespace

TEST_CASE("sim graph: a capture whose pool starts empty takes its segments in relaxed mode") {
  Tensor x = input(1, {96, 80}), w = input(2, {80, 72});
  const Tensor eager = sum(relu(matmul(x, w)));
  const uint64_t system_allocs = memory_stats(kSim).system_allocs;
  gpu::Graph graph;
  Tensor out;
  CHECK(error_of([&] {
          gpu::GraphCapture capture(graph, kSim);  // thread-local mode, as on cuda
          out = sum(relu(matmul(x, w)));
        }) == "(no error)");
  REQUIRE(graph.captured());
  CHECK(memory_stats(kSim).system_allocs > system_allocs);        // the pool's own cudaMalloc
  CHECK(gpu::thread_capture_mode() == gpu::CaptureMode::global);  // restored
  graph.replay();
  CHECK(out.item() == eager.item());
}

TEST_CASE("capture rules: an unsafe call on the capturing thread invalidates the capture") {
  Tensor x = input(3, {8, 8});
  gpu::Graph graph;
  graph.capture_begin(kSim);
  Tensor y = mul(x, x);
  gpu::Event event(kSim);
  event.record(gpu::comm_stream(kSim));
  const std::string refused = error_of([&] { (void)event.query(); });
  CHECK(refused.find("event query") != std::string::npos);
  CHECK(refused.find(kUnsupported) != std::string::npos);
  CHECK(refused.find("thread-local mode by this thread") != std::string::npos);
  CHECK(gpu::is_capturing(kSim));  // the capture goes on, invalid
  const std::string end = error_of([&] { graph.capture_end(); });
  CHECK(end.find(kInvalidated) != std::string::npos);
  CHECK(end.find("event query") != std::string::npos);
  CHECK_FALSE(graph.captured());
  CHECK_FALSE(gpu::is_capturing(kSim));
  CHECK(event.query());  // after the capture: allowed again
}

TEST_CASE("capture rules: thread-local and relaxed captures ignore other threads' calls") {
  for (gpu::CaptureMode mode : {gpu::CaptureMode::per_thread, gpu::CaptureMode::relaxed}) {
    CAPTURE(gpu::capture_mode_name(mode));
    gpu::Graph graph;
    Tensor x = input(4, {8, 8}), y;
    {
      gpu::GraphCapture capture(graph, kSim, mode);
      y = mul(x, x);
      CHECK(on_other_thread(sync_sim1) == "(no error)");  // its thread is in global mode
    }
    CHECK(graph.captured());
  }
}

TEST_CASE("capture rules: a global capture forbids other threads in global mode only") {
  Tensor x = input(5, {8, 8}), y;
  gpu::Graph refused;
  refused.capture_begin(kSim, gpu::CaptureMode::global);
  y = mul(x, x);
  const std::string message = on_other_thread(sync_sim1);
  CHECK(message.find("stream synchronize") != std::string::npos);
  CHECK(message.find("global mode by another thread") != std::string::npos);
  CHECK(message.find(kUnsupported) != std::string::npos);
  CHECK(error_of([&] { refused.capture_end(); }).find(kInvalidated) != std::string::npos);
  CHECK_FALSE(refused.captured());
  const gpu::CaptureMode local = gpu::CaptureMode::per_thread;
  gpu::Graph allowed;
  {
    gpu::GraphCapture capture(allowed, kSim, gpu::CaptureMode::global);
    y = mul(x, x);
    CHECK(on_other_thread(sync_sim1, &local) == "(no error)");
  }
  CHECK(allowed.captured());
}

TEST_CASE("capture rules: relaxed allows the capturing thread's unsafe calls, not its stream's") {
  Tensor x = input(6, {8, 8}), y;
  gpu::Graph graph;
  graph.capture_begin(kSim, gpu::CaptureMode::relaxed);
  y = mul(x, x);
  gpu::Event event(kSim);
  event.record(gpu::comm_stream(kSim));
  CHECK(event.query());
  synchronize(kSim1);
  {
    gpu::CaptureModeGuard relaxed(gpu::CaptureMode::relaxed);  // the thread's mode: no matter
    CHECK(error_of([] {
            gpu::synchronize(gpu::compute_stream(kSim));
          }).find("stream synchronize is not allowed while stream compute of sim:0") !=
          std::string::npos);
  }
  CHECK(error_of([&] { graph.capture_end(); }).find(kInvalidated) != std::string::npos);
  CHECK_FALSE(graph.captured());
}

TEST_CASE("capture rules: the thread's relaxed mode lets a thread-local capture's thread call") {
  Tensor x = input(7, {8, 8}), y;
  gpu::Graph graph;
  {
    gpu::GraphCapture capture(graph, kSim);
    y = mul(x, x);
    gpu::CaptureModeGuard relaxed(gpu::CaptureMode::relaxed);
    sync_sim1();
    CHECK(gpu::thread_capture_mode() == gpu::CaptureMode::relaxed);
  }
  CHECK(graph.captured());
  CHECK(gpu::thread_capture_mode() == gpu::CaptureMode::global);
}

TEST_CASE("capture rules: a capture not begun in relaxed mode ends on its own thread") {
  gpu::Graph graph;
  graph.capture_begin(kSim);
  const std::string wrong = on_other_thread([&] { graph.capture_end(); });
  CHECK(wrong.find("cudaErrorStreamCaptureWrongThread") != std::string::npos);
  CHECK(graph.capturing());
  graph.capture_end();
  CHECK(graph.captured());
  gpu::Graph relaxed;
  relaxed.capture_begin(kSim, gpu::CaptureMode::relaxed);
  CHECK(on_other_thread([&] { relaxed.capture_end(); }) == "(no error)");
  CHECK(relaxed.captured());
}

TEST_CASE("sim graph: filling a pool queries no event of a block freed on another stream") {
  sim::DelayedStreamsScope delayed;  // the communication stream's work waits: events pend
  const gpu::Stream comm = gpu::comm_stream(kSim);
  Tensor used = input(8, {4096});
  Tensor copy = empty({4096}, DType::f32, kSim);
  {
    gpu::StreamGuard on_comm(comm);
    kernel_table(DeviceType::sim).copy(copy, used);  // queued on comm, reads `used`
  }
  gpu::record_stream(used, comm);
  used = Tensor();  // pending on comm's event
  gpu::Graph graph;
  Tensor x = input(9, {8, 8}), y;
  CHECK(error_of([&] {
          gpu::GraphCapture capture(graph, kSim);
          y = mul(x, x);
        }) == "(no error)");
  CHECK(graph.captured());
  gpu::synchronize(comm);
}
