// Graph capture and replay of the sim and cuda devices (host API, as PyTorch's
// torch.cuda.CUDAGraph): the work queued on a stream between capture_begin and capture_end is
// recorded instead of run, and replay() runs the recording again -- one launch from the host
// for the whole of it. The kernels' arguments (pointers, sizes, scalars) are baked in, so a
// replay reads and writes the same addresses: inputs are copied into the tensors captured,
// and a value that changes between replays must live in device memory.
//   gpu::Graph graph;
//   { gpu::GraphCapture capture(graph, device); y = f(x); }  // recorded, not run
//   copy x's new values into x (kernel copy, or copy_async from pinned memory); graph.replay();
// Allocations made on the capturing stream come from a memory pool that the graph owns
// (caching_allocator.h): blocks freed during the capture return to that pool only, and it
// lives as long as the graph, so the addresses recorded stay the graph's.
// Work that needs the host while a stream captures -- a stream, event or device synchronize, an
// event query, a synchronous copy to or from the device (.item(), .to(kCPU), a tensor made from
// host values), emptying the allocator's cache -- is refused by CUDA's capture-mode rules
// (capture_rules.h) with an rg::Error naming it, and invalidates the capture, as on a GPU.
// cuda: cudaStreamBeginCapture (thread-local mode by default), cudaStreamEndCapture,
// cudaGraphInstantiate, cudaGraphLaunch. sim: kernels/sim/stream_queue.h records the work (one
// capture at a time in the process).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cuda/capture_rules.h"
#include "kernels/cuda/stream.h"

namespace rg::gpu {

class Graph {
 public:
  Graph();
  ~Graph();  // frees the graph and its memory pool (blocks still live return to the device)
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Starts recording the work queued on `stream` (its device's current stream by default), in
  // `mode` (capture_rules.h: which threads' unsafe calls it forbids).
  void capture_begin(const Stream& stream, CaptureMode mode = CaptureMode::per_thread);
  void capture_begin(Device device, CaptureMode mode = CaptureMode::per_thread) {
    capture_begin(current_stream(device), mode);
  }
  // Ends the capture; throws (cudaErrorStreamCaptureInvalidated, naming the call) when an unsafe
  // call invalidated it, and the graph stays uncaptured.
  void capture_end();
  void capture_abort() noexcept;  // ends a capture and drops its recording (after an error)
  // Runs the recorded work on the stream captured, in order (asynchronously on cuda).
  void replay();
  bool captured() const;
  bool capturing() const;
  Device device() const;
  // sim: the number of kernels, GEMMs and copies recorded (0 on cuda).
  size_t recorded_work() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// capture_begin on construction, capture_end on destruction. When an exception leaves the
// scope, the capture is ended and its recording dropped (the graph stays uncaptured).
class GraphCapture {
 public:
  GraphCapture(Graph& graph, Device device, CaptureMode mode = CaptureMode::per_thread);
  GraphCapture(Graph& graph, const Stream& stream, CaptureMode mode = CaptureMode::per_thread);
  ~GraphCapture() noexcept(false);
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

 private:
  Graph& graph_;
  int exceptions_ = 0;
};

// Throws rg::Error "<operation> is not allowed while stream ... of <device> is capturing a
// graph" when a stream of `device` captures, by any thread: ringgrad's own rule for a replay.
void check_not_capturing(Device device, const char* operation);
// check_unsafe_call (capture_rules.h) for a synchronous copy between these devices.
void check_copy_not_capturing(Device dst_device, Device src_device);
// Graph replays run so far in this process (test instrumentation).
uint64_t graph_replays();

}  // namespace rg::gpu
