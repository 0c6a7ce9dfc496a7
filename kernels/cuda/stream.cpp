// The gpu:: host API of kernels/cuda/stream.h for both devices: sim answers directly
// (everything is in order on the calling thread), cuda forwards to kernels/cuda/runtime.
#include "kernels/cuda/stream.h"

#include <atomic>
#include <chrono>
#include <cstring>

#include "kernels/sim/device.h"
#if RG_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/runtime.h"
#endif

namespace rg::gpu {

namespace {

constexpr int kMaxIndex = 16;
// Per-thread current stream overrides set by StreamGuard: [device type][index].
thread_local Stream current_override[kNumDeviceTypes][kMaxIndex];
thread_local bool has_override[kNumDeviceTypes][kMaxIndex] = {};
std::atomic<bool> g_allow_tf32{false};

// sim has no real streams; distinct tokens keep the allocator's per-stream pools apart.
void* const kSimCompute = reinterpret_cast<void*>(1);
void* const kSimComm = reinterpret_cast<void*>(2);

void check_gpu_device(Device d, const char* what) {
  RG_CHECK(d.type != DeviceType::cpu, what, ": device cpu has no streams");
  RG_CHECK(d.index >= 0 && d.index < kMaxIndex, what, ": device index ", d.index, " out of range");
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
  return Stream{d, kSimCompute};
}

Stream comm_stream(Device d) {
  check_gpu_device(d, "comm_stream");
#if RG_WITH_CUDA
  if (d.is_cuda()) return Stream{d, cuda::comm_stream(d.index)};
#endif
  return Stream{d, kSimComm};
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

void synchronize(const Stream& s) {
#if RG_WITH_CUDA
  if (s.device.is_cuda()) CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s.handle)));
#else
  (void)s;
#endif
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

Event::Event(Device device, bool timing) : device_(device) {
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
  (void)s;
  host_time_ms_ = now_ms();
}

void Event::wait(const Stream& s) const {
#if RG_WITH_CUDA
  if (handle_)
    CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s.handle),
                                   static_cast<cudaEvent_t>(handle_), 0));
#endif
  (void)s;
}

void Event::synchronize() const {
#if RG_WITH_CUDA
  if (handle_) CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)));
#endif
}

bool Event::query() const {
#if RG_WITH_CUDA
  if (handle_) {
    cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
    if (e == cudaErrorNotReady) return false;
    CUDA_CHECK(e);
  }
#endif
  return true;
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
  return static_cast<float>(end.host_time_ms_ - host_time_ms_);
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

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

}  // namespace rg::gpu
