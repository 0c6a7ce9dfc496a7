// See graph.h. The capture registry and its rules (capture_rules.h) are what the devices'
// host-synchronous operations consult to refuse themselves; the memory pool is the caching
// allocator's, routed to by begin_pool/end_pool around the capture.
#include "kernels/cuda/graph.h"

#include <atomic>
#include <utility>
#include <vector>

#include "kernels/cuda/device_errors.h"
#include "kernels/sim/device.h"
#include "kernels/sim/stream_queue.h"
#if RG_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace rg::gpu {

namespace {

std::atomic<uint64_t> g_next_pool{1};
std::atomic<uint64_t> g_replays{0};

CachingAllocator& allocator_of(Device d) {
#if RG_WITH_CUDA
  if (d.is_cuda()) return cuda::allocator(d.index);
#endif
  return sim::allocator(d.index);
}

}  // namespace

struct Graph::Impl {
  Stream stream;
  bool capturing = false;
  bool captured = false;
  uint64_t pool = 0;
  std::vector<ErrorSlot> error_slots;  // of the kernels captured (device_errors.h)
  sim::WorkList work;                  // sim: the recording
#if RG_WITH_CUDA
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
#endif

  // Stops capturing; keeps the recording when `keep` and nothing invalidated it (else drops
  // it, as after an error). Throws (cudaErrorStreamCaptureInvalidated) when `keep` and an
  // unsafe call invalidated the capture.
  void stop(bool keep) {
    const std::string invalidated_by = unregister_capture(stream.device, !keep);
    capturing = false;
    allocator_of(stream.device).end_pool(stream.handle);
    keep = keep && invalidated_by.empty();
    error_slots = take_captured_error_slots(stream.device);
    if (!keep) release_error_slots(stream.device, std::exchange(error_slots, {}));
#if RG_WITH_CUDA
    if (stream.device.is_cuda()) {
      cudaError_t e = cudaStreamEndCapture(static_cast<cudaStream_t>(stream.handle), &graph);
      if (!keep) {  // dropped: also clear the error an invalidated capture left
        if (graph) cudaGraphDestroy(graph);
        graph = nullptr;
        cudaGetLastError();
      } else {
        CUDA_CHECK(e);
        CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      }
    }
#endif
    if (stream.device.is_sim()) sim::end_capture(stream.handle);
    if (!keep) work.clear();
    captured = keep;
    RG_CHECK(invalidated_by.empty(),
             "Graph::capture_end: cudaErrorStreamCaptureInvalidated: the "
             "capture on ",
             stream.device.str(), ":", stream.device.index, " was invalidated by ", invalidated_by,
             " during it; nothing is captured");
  }
};

Graph::Graph() : impl_(std::make_unique<Impl>()) {}

Graph::~Graph() {
  capture_abort();
#if RG_WITH_CUDA
  if (impl_->exec) cudaGraphExecDestroy(impl_->exec);
  if (impl_->graph) cudaGraphDestroy(impl_->graph);
#endif
  if (impl_->pool) allocator_of(impl_->stream.device).release_pool(impl_->pool);
  release_error_slots(impl_->stream.device, impl_->error_slots);
}

void Graph::capture_begin(const Stream& stream, CaptureMode mode) {
  const Device d = stream.device;
  RG_CHECK(d.is_sim() || d.is_cuda(), "Graph::capture_begin: device ", d,
           " has no streams to capture (sim or cuda only)");
  RG_CHECK(!impl_->captured && !impl_->capturing,
           "Graph::capture_begin: this graph is already captured; make a new Graph");
  RG_CHECK(d.index >= 0 && d.index < kMaxDeviceIndex, "Graph::capture_begin: device index ",
           d.index, " out of range");
  RG_CHECK(!is_capturing(d), "Graph::capture_begin: a stream of ", d, " is already capturing");
  if (impl_->pool) allocator_of(impl_->stream.device).release_pool(impl_->pool);  // aborted before
  prepare_error_slots(d);  // before the capture: making the ring copies from the host
  impl_->stream = stream;
  impl_->pool = g_next_pool++;
  register_capture(stream, mode);  // throws if another thread has just begun one on d
  bool pooled = false;
  try {
    allocator_of(d).begin_pool(stream.handle, impl_->pool);
    pooled = true;
#if RG_WITH_CUDA
    if (d.is_cuda())  // CaptureMode has cudaStreamCaptureMode's values (capture_rules.cpp)
      CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream.handle),
                                        static_cast<cudaStreamCaptureMode>(mode)));
#endif
    if (d.is_sim()) sim::begin_capture(stream.handle, &impl_->work);
  } catch (...) {
    unregister_capture(d, true);
    if (pooled) allocator_of(d).end_pool(stream.handle);
    throw;
  }
  impl_->capturing = true;
}

void Graph::capture_end() {
  RG_CHECK(impl_->capturing, "Graph::capture_end: the graph is not capturing");
  impl_->stop(true);
}

void Graph::capture_abort() noexcept {
  if (!impl_->capturing) return;
  try {
    impl_->stop(false);
  } catch (...) {  // the capture is over either way; the caller is reporting another error
  }
}

void Graph::replay() {
  RG_CHECK(impl_->captured, "Graph::replay: nothing captured (call capture_begin/capture_end)");
  const Stream& s = impl_->stream;
  check_not_capturing(s.device, "Graph::replay");
  g_replays++;
  arm_error_slots(s.device, impl_->error_slots);  // checked at the next synchronization
#if RG_WITH_CUDA
  if (s.device.is_cuda()) {
    CUDA_CHECK(cudaGraphLaunch(impl_->exec, static_cast<cudaStream_t>(s.handle)));
    return;
  }
#endif
  auto run = [work = &impl_->work] {
    for (auto& item : *work) item();
  };
  if (sim::is_delayed(s.handle))
    sim::enqueue(s.handle, run);  // in order with the delayed stream's other work
  else
    run();
}

bool Graph::captured() const { return impl_->captured; }
bool Graph::capturing() const { return impl_->capturing; }
Device Graph::device() const { return impl_->stream.device; }
size_t Graph::recorded_work() const { return impl_->work.size(); }

GraphCapture::GraphCapture(Graph& graph, Device device, CaptureMode mode)
    : GraphCapture(graph, current_stream(device), mode) {}

GraphCapture::GraphCapture(Graph& graph, const Stream& stream, CaptureMode mode)
    : graph_(graph), exceptions_(std::uncaught_exceptions()) {
  graph_.capture_begin(stream, mode);
}

GraphCapture::~GraphCapture() noexcept(false) {
  if (!graph_.capturing()) return;
  if (std::uncaught_exceptions() > exceptions_)
    graph_.capture_abort();  // an error left the scope: it reports, the recording is dropped
  else
    graph_.capture_end();
}

void check_not_capturing(Device d, const char* operation) {
  void* s = capturing_stream_of(d);
  if (!s) return;
  RG_FAIL(operation, " is not allowed while stream ",
          s == compute_stream(d).handle ? std::string("compute") : str(s), " of ", d.str(), ":",
          d.index, " is capturing a graph (do it before capture_begin or after capture_end)");
}

void check_copy_not_capturing(Device dst, Device src) {
  if (dst.is_cpu())
    check_unsafe_call("a synchronous device-to-host copy (.item(), .to(cpu))");
  else if (src.is_cpu())
    check_unsafe_call("a synchronous host-to-device copy (a tensor from host values)");
  else
    check_unsafe_call("a synchronous device copy");
}

uint64_t graph_replays() { return g_replays; }

}  // namespace rg::gpu
