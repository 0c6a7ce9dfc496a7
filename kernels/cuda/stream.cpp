// The gpu:: host API of kernels/cuda/stream.h for both devices: sim answers directly
// (everything in order on the calling thread; in delayed-stream mode the communication
// stream's work waits in kernels/sim/stream_queue), cuda forwards to kernels/cuda/runtime.
#include "kernels/cuda/stream.h"

#include <atomic>
#include <chrono>
#include <cstring>

#include "kernels/cuda/device_errors.h"
#include "kernels/cuda/graph.h"
#include "kernels/sim/device.h"
#include "kernels/sim/sticky_error.h"
#include "kernels/sim/stream_queue.h"
#if RG_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace rg::gpu {

namespace {

// Per-thread current stream overrides set by StreamGuard: [device type][index].
thread_local Stream current_override[kNumDeviceTypes][kMaxDeviceIndex];
thread_local bool has_override[kNumDeviceTypes][kMaxDeviceIndex] = {};
std::atomic<bool> g_allow_tf32{false};

void check_gpu_device(Device d, const char* what) {
  RG_CHECK(d.type != DeviceType::cpu, what, ": device cpu has no streams");
  RG_CHECK(d.index >= 0 && d.index < kMaxDeviceIndex, what, ": device index ", d.index,
           " out of range");
#if !RG_WITH_CUDA
  RG_CHECK(d.type != DeviceType::cuda, what, ": ringgrad was built without CUDA");
#endif
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Stream compute_stream(Device d) {
  check_gpu_device(d, "compute_stream");
#if RG_WITH_CUDA
  if (d.is_cuda()) return Stream{d, cuda::compute_stream(d.index)};
#endif
  return Stream{d, sim::compute_token(d.index)};
}

Stream comm_stream(Device d) {
  check_gpu_device(d, "comm_stream");
#if RG_WITH_CUDA
  if (d.is_cuda()) return Stream{d, cuda::comm_stream(d.index)};
#endif
  return Stream{d, sim::comm_token(d.index)};
}

Stream current_stream(Device d) {
  check_gpu_device(d, "current_stream");
#if RG_WITH_CUDA
  if (d.is_cuda()) cuda::set_device(d.index);
#endif
  int t = static_cast<int>(d.type);
  if (has_override[t][d.index]) return current_override[t][d.index];
  return compute_stream(d);
}

bool current_stream_defers_host_access(Device d) {
  return d.is_sim() && sim::is_delayed(current_stream(d).handle);
}

void synchronize(const Stream& s) {
  check_stream_not_capturing(s, "stream synchronize");
#if RG_WITH_CUDA
  if (s.device.is_cuda()) CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s.handle)));
#endif
  if (s.device.is_sim()) {
    sim::check_sticky_error(s.device.index, "cudaStreamSynchronize");
    sim::drain(s.handle);
  }
  count_host_sync(s.device);
  check_device_errors(s.device);
}

StreamGuard::StreamGuard(const Stream& stream) : device_(stream.device) {
  check_gpu_device(device_, "StreamGuard");
  int t = static_cast<int>(device_.type), i = device_.index;
  previous_ = current_override[t][i];
  had_previous_ = has_override[t][i];
  current_override[t][i] = stream;
  has_override[t][i] = true;
}

StreamGuard::~StreamGuard() {
  int t = static_cast<int>(device_.type), i = device_.index;
  current_override[t][i] = previous_;
  has_override[t][i] = had_previous_;
}

Event::Event(Device device, bool timing) : device_(device), timing_(timing) {
  check_gpu_device(device, "Event");
#if RG_WITH_CUDA
  if (device.is_cuda()) {
    cuda::set_device(device.index);
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
    handle_ = e;
  }
#else
  (void)timing;
#endif
}

Event::~Event() {
#if RG_WITH_CUDA
  if (handle_) cudaEventDestroy(static_cast<cudaEvent_t>(handle_));
#endif
}

void Event::record(const Stream& s) {
#if RG_WITH_CUDA
  if (handle_) {
    CUDA_CHECK(
        cudaEventRecord(static_cast<cudaEvent_t>(handle_), static_cast<cudaStream_t>(s.handle)));
    return;
  }
#endif
  sim::check_sticky_error(device_.index, "cudaEventRecord");
  sim_stream_ = s.handle;
  if (!timing_) {
    sim_ticket_ = sim::ticket(s.handle);
    return;
  }
  // A new clock each record: a stamp still queued for an earlier record writes the old one.
  auto time = std::make_shared<double>(now_ms());
  sim_time_ms_ = time;
  if (sim::is_delayed(s.handle)) sim::enqueue(s.handle, [time] { *time = now_ms(); });
  sim_ticket_ = sim::ticket(s.handle);
}

void Event::wait(const Stream& s) const {
#if RG_WITH_CUDA
  if (handle_)
    CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s.handle),
                                   static_cast<cudaEvent_t>(handle_), 0));
#endif
  // sim: work queued later on `s` must find the event's work done; running it now is the
  // simplest order that guarantees it (the compute stream never waits in a queue).
  if (handle_ || s.handle == sim_stream_) return;
  if (sim::is_delayed(sim_stream_)) sim::count_wait_on_comm(s.device.index);
  sim::run_until(sim_stream_, sim_ticket_);
}

void Event::synchronize() const {
  check_unsafe_call("event synchronize");
#if RG_WITH_CUDA
  if (handle_) CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)));
#endif
  if (!handle_) {
    sim::check_sticky_error(device_.index, "cudaEventSynchronize");
    sim::run_until(sim_stream_, sim_ticket_);
  }
  count_host_sync(device_);
}

bool Event::query() const {
  check_unsafe_call("event query (cudaEventQuery)");
#if RG_WITH_CUDA
  if (handle_) {
    cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
    if (e == cudaErrorNotReady) return false;
    CUDA_CHECK(e);
    return true;
  }
#endif
  sim::check_sticky_error(device_.index, "cudaEventQuery");
  return sim::reached(sim_stream_, sim_ticket_);
}

float Event::elapsed_ms(const Event& end) const {
#if RG_WITH_CUDA
  if (handle_) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(handle_),
                                    static_cast<cudaEvent_t>(end.handle_)));
    return ms;
  }
#endif
  RG_CHECK(sim_time_ms_ && end.sim_time_ms_,
           "Event::elapsed_ms: both events must be recorded with timing = true");
  RG_CHECK(query() && end.query(),
           "Event::elapsed_ms: an event's work is not complete yet (cudaErrorNotReady)");
  return static_cast<float>(*end.sim_time_ms_ - *sim_time_ms_);
}

void record_stream(const Tensor& t, const Stream& stream) {
  RG_CHECK(stream.device == t.device(), "record_stream: tensor on ", t.device().str(), " index ",
           t.device().index, ", stream of ", stream.device.str(), " index ", stream.device.index);
  check_gpu_device(t.device(), "record_stream");
  void* block = t.storage()->data;
  if (!block || !t.storage()->release) return;  // borrowed memory: not the allocator's
  CachingAllocator& allocator =
#if RG_WITH_CUDA
      t.device().is_cuda() ? cuda::allocator(t.device().index) :
#endif
                           sim::allocator(t.device().index);
  RG_CHECK(allocator.record_stream(block, stream.handle, t.device().index),
           "record_stream: the tensor's storage on ", t.device(),
           " does not start a block of its allocator");
}

void set_memory_fraction(Device d, double fraction) {
  check_gpu_device(d, "set_memory_fraction");
#if RG_WITH_CUDA
  if (d.is_cuda()) return cuda::allocator(d.index).set_memory_fraction(fraction);
#endif
  sim::allocator(d.index).set_memory_fraction(fraction);
}

size_t total_memory(Device d) {
  check_gpu_device(d, "total_memory");
#if RG_WITH_CUDA
  if (d.is_cuda()) return cuda::total_memory(d.index);
#endif
  return sim::total_memory(d.index);
}

}  // namespace rg::gpu

namespace rg {
void set_allow_tf32(bool allow) { gpu::g_allow_tf32 = allow; }
bool allow_tf32() { return gpu::g_allow_tf32; }
}  // namespace rg
