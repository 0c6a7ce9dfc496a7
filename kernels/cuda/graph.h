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
// Work that needs the host while a stream captures -- a stream, event or device synchronize, a
// synchronous copy to or from the device (.item(), .to(kCPU), a tensor made from host values),
// emptying the allocator's cache -- is refused with an rg::Error naming it, as CUDA refuses it.
// cuda: cudaStreamBeginCapture (thread-local mode), cudaStreamEndCapture,
// cudaGraphInstantiate, cudaGraphLaunch. sim: kernels/sim/stream_queue.h records the work (one
// capture at a time in the process).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cuda/stream.h"

namespace rg::gpu {

class Graph {
 public:
  Graph();
  ~Graph();  // frees the graph and its memory pool (blocks still live return to the device)
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Starts recording the work queued on `stream` (its device's current stream by default).
  void capture_begin(const Stream& stream);
  void capture_begin(Device device) { capture_begin(current_stream(device)); }
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
  GraphCapture(Graph& graph, Device device);
  GraphCapture(Graph& graph, const Stream& stream);
  ~GraphCapture() noexcept(false);
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

 private:
  Graph& graph_;
  int exceptions_ = 0;
};

// True while a stream of `device` captures a graph.
bool is_capturing(Device device);
// Throws rg::Error "<operation> is not allowed while stream ... of <device> is capturing a
// graph" when a stream of `device` captures; called before work that needs the host (the
// devices' copy, synchronize and empty_cache through capture_checked_device.h, streams, events).
void check_not_capturing(Device device, const char* operation);
// check_not_capturing for a synchronous copy between these devices (the device side's).
void check_copy_not_capturing(Device dst_device, Device src_device);
// Graph replays run so far in this process (test instrumentation).
uint64_t graph_replays();

}  // namespace rg::gpu
