// Internals of the cuda device (cuda build only): per-device streams, allocator and the
// cuBLAS handle. The public face is kernels/cuda/stream.h; kernels use stream_for(tensor).
#pragma once
#include <cstddef>

#include "kernels/cuda/caching_allocator.h"

namespace rg::cuda {

int device_count();               // 0 when there is no GPU or no driver; never throws
const char* why_no_device();      // the driver's error and versions when device_count() is 0
void set_device(int index);       // makes `index` current for this thread (cheap when it is)
void* compute_stream(int index);  // cudaStream_t
void* comm_stream(int index);
gpu::CachingAllocator& allocator(int index);
size_t total_memory(int index);
// cuBLAS handle (with its workspace) bound to `stream` of device `index`; one per pair.
void* cublas_handle(int index, void* stream);
// The cuBLASLt handle of device `index` (one per device: cuBLASLt takes the stream per call)
// and the workspace of cublas_handle(index, stream), which cuBLAS and cuBLASLt calls on that
// stream share (the stream runs them one after the other).
struct BlasLt {
  void* handle;  // cublasLtHandle_t
  void* workspace;
  size_t workspace_bytes;
};
BlasLt cublaslt_for(int index, void* stream);

// Page-locked host memory, uncached (null when out of memory); kernels/cuda/pinned.cpp
// caches it.
void* pinned_allocate(size_t nbytes);
void pinned_release(void* ptr);
// Fills raw's event hooks (record_stream) with cuda events. `stream_device`: the device
// index in its low 8 bits.
void set_event_hooks(gpu::RawMemory& raw);

}  // namespace rg::cuda
