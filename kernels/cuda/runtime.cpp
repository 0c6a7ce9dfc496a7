// The cuda device (cuda build only): per-device compute and communication streams, the
// caching allocator over cudaMalloc, cuBLAS handles, pinned host memory, and registration
// of the DeviceInterface. Nothing touches the driver until first use, so loading the
// library on a machine without a GPU is free, and device_count() is then 0.
#include "kernels/cuda/runtime.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>

#include "kernels/cuda/capture_checked_device.h"
#include "kernels/cuda/capture_rules.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device_errors.h"
#include "kernels/cuda/stream.h"

namespace rg::cuda {

namespace {

constexpr int kMaxDevices = 16;
// Each cuBLAS handle's workspace (cuBLASLt calls on its stream use it too).
constexpr size_t kBlasWorkspace = size_t(32) << 20;
thread_local int tls_current_device = -1;

struct DeviceState {
  std::once_flag init;
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  std::unique_ptr<gpu::CachingAllocator> allocator;
  std::mutex blas_mutex;
  std::map<void*, std::pair<cublasHandle_t, void*>> blas;  // stream -> (handle, workspace)
  cublasLtHandle_t lt = nullptr;
};

}  // namespace

// Events of the caching allocator's record_stream: recorded on the stream a block was also
// used on, at its free. Without an event (creation failed) the stream is synchronized.
void set_event_hooks(gpu::RawMemory& raw) {
  raw.record_event = [](void* stream, int device) noexcept -> void* {
    cudaEvent_t e = nullptr;
    if (cudaSetDevice(device & 0xff) == cudaSuccess &&
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventRecord(e, static_cast<cudaStream_t>(stream)) == cudaSuccess)
      return e;
    cudaGetLastError();
    if (e) cudaEventDestroy(e);
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    tls_current_device = -1;
    return nullptr;
  };
  raw.event_done = [](void* e) noexcept {
    cudaError_t state = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (state == cudaErrorNotReady) return false;
    cudaGetLastError();  // an error: the stream is dead, and the block with it
    return true;
  };
  raw.event_synchronize = [](void* e) noexcept {
    cudaEventSynchronize(static_cast<cudaEvent_t>(e));
  };
  raw.event_release = [](void* e) noexcept { cudaEventDestroy(static_cast<cudaEvent_t>(e)); };
}

namespace {

DeviceState& state(int index) {
  RG_CHECK(index >= 0 && index < device_count(), "cuda: device index ", index, " out of range (",
           device_count(), " devices)");
  static DeviceState* states = new DeviceState[kMaxDevices];  // never destroyed
  DeviceState& s = states[index];
  std::call_once(s.init, [&] {
    set_device(index);
    CUDA_CHECK(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s.comm, cudaStreamNonBlocking));
    gpu::RawMemory raw;
    // cudaMalloc: null when the device is full; any other failure (a capture's rules, a
    // sticky error) is an rg::Error naming it, not an out-of-memory.
    raw.allocate = [](size_t n, int device) -> void* {
      set_device(device);
      gpu::check_unsafe_call("cudaMalloc");
      void* p = nullptr;
      const cudaError_t e = cudaMalloc(&p, n);
      if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();  // clear the (not sticky) OOM error
        return nullptr;
      }
      if (e != cudaSuccess)
        RG_FAIL("cuda: cudaMalloc(", n, " bytes) on cuda:", device,
                " failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
      return p;
    };
    raw.release = [](void* p, int device) {
      set_device(device);
      cudaFree(p);
    };
    raw.total = total_memory;
    set_event_hooks(raw);
    s.allocator = std::make_unique<gpu::CachingAllocator>(str("cuda:", index), raw, index);
  });
  return s;
}

// "12.4" from CUDA's 12040.
std::string cuda_version_text(int version) { return str(version / 1000, ".", version % 1000 / 10); }

// The devices the driver sees, or why it sees none, asked once.
struct DeviceScan {
  int count = 0;
  std::string why_none;
};

const DeviceScan& scan() {
  static const DeviceScan result = [] {
    DeviceScan s;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) {
      s.count = n < kMaxDevices ? n : kMaxDevices;
      return s;
    }
    cudaGetLastError();
    int driver = 0;
    cudaDriverGetVersion(&driver);
    s.why_none = e == cudaSuccess ? std::string("cudaGetDeviceCount found 0 devices")
                                  : str("cudaGetDeviceCount failed: ", cudaGetErrorString(e), " (",
                                        cudaGetErrorName(e), ")");
    s.why_none += driver ? str("; the driver supports CUDA ", cuda_version_text(driver))
                         : std::string("; no CUDA driver was found (libcuda.so)");
    s.why_none += str(", this build needs CUDA ", cuda_version_text(CUDART_VERSION),
                      " (a driver >= 580 for CUDA 13)");
    return s;
  }();
  return result;
}

}  // namespace

int device_count() { return scan().count; }
const char* why_no_device() { return scan().why_none.c_str(); }

void set_device(int index) {
  if (tls_current_device == index) return;
  CUDA_CHECK(cudaSetDevice(index));
  tls_current_device = index;
}

void* compute_stream(int index) { return state(index).compute; }
void* comm_stream(int index) { return state(index).comm; }
gpu::CachingAllocator& allocator(int index) { return *state(index).allocator; }

size_t total_memory(int index) {
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return prop.totalGlobalMem;
}

void* cublas_handle(int index, void* stream) {
  DeviceState& s = state(index);
  std::lock_guard<std::mutex> lock(s.blas_mutex);
  auto it = s.blas.find(stream);
  if (it != s.blas.end()) return it->second.first;
  set_device(index);
  // It allocates: a potentially unsafe call while this thread captures (capture_rules.h).
  gpu::check_unsafe_call("cublasCreate (the first cuBLAS call on a stream)");
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, static_cast<cudaStream_t>(stream)));
  // A private workspace per handle keeps cuBLAS from allocating behind our allocator. It
  // comes from the caching allocator, so it counts in memory_stats() and against the cap,
  // and is held as long as the handle (the process).
  void* workspace = s.allocator->allocate(kBlasWorkspace, stream);
  account_process_block(Device(DeviceType::cuda, index),
                        gpu::CachingAllocator::size_class(kBlasWorkspace));
  CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, kBlasWorkspace));
  s.blas[stream] = {handle, workspace};
  return handle;
}

BlasLt cublaslt_for(int index, void* stream) {
  cublas_handle(index, stream);  // makes the stream's workspace
  DeviceState& s = state(index);
  std::lock_guard<std::mutex> lock(s.blas_mutex);
  if (!s.lt) {
    set_device(index);
    gpu::check_unsafe_call("cublasLtCreate (the device's first cuBLASLt call)");
    CUBLAS_CHECK(cublasLtCreate(&s.lt));
  }
  return {s.lt, s.blas.at(stream).second, kBlasWorkspace};
}

// ---- pinned host memory (the pool is kernels/cuda/pinned.cpp's)
void* pinned_allocate(size_t nbytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, nbytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}
void pinned_release(void* ptr) { cudaFreeHost(ptr); }

namespace {

void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  Device gpu_side = dst_device.is_cuda() ? dst_device : src_device;
  cudaStream_t stream = static_cast<cudaStream_t>(gpu::current_stream(gpu_side).handle);
  CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  gpu::count_host_sync(gpu_side);
  if (dst_device.is_cpu()) gpu::check_device_errors(gpu_side);
}

}  // namespace

// Called once by register_builtin_backends (kernels/builtin.h).
void register_cuda_device() {
  DeviceInterface d;
  d.allocate = [](size_t n, int index) {
    return allocator(index).allocate(n,
                                     gpu::current_stream(Device(DeviceType::cuda, index)).handle);
  };
  d.deallocate = [](void* p, size_t, int index) { allocator(index).deallocate(p); };
  d.block_bytes = gpu::CachingAllocator::size_class;
  d.copy = copy;
  d.synchronize = [](int index) {
    set_device(index);
    CUDA_CHECK(cudaDeviceSynchronize());
    gpu::count_host_sync(Device(DeviceType::cuda, index));
    gpu::check_device_errors(Device(DeviceType::cuda, index));
  };
  d.stats = [](int index) { return allocator(index).stats(); };
  d.empty_cache = [](int index) {
    CUDA_CHECK(cudaDeviceSynchronize());
    allocator(index).empty_cache();
  };
  d.device_count = device_count;
  d.why_no_device = why_no_device;
  gpu::register_gpu_device(DeviceType::cuda, d);  // with the capture checks
}
}  // namespace rg::cuda
