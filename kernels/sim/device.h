// Internals of the sim device shared with the gpu:: host API (kernels/cuda/stream.cpp).
#pragma once
#include "kernels/cuda/caching_allocator.h"

namespace rg::sim {
gpu::CachingAllocator& allocator(int index);
// Each sim device's memory: RG_SIM_DEVICE_MEMORY bytes when set, else the host's.
size_t total_memory(int index);
// RG_SIM_DEVICE_MEMORY, read now: 0 when unset; throws rg::Error naming it on a bad value.
size_t device_memory_cap();
// sim's cudaMalloc (null when the device is full) and cudaFree (device_memory.cpp).
void* raw_allocate(size_t nbytes, int index);
void raw_release(void* ptr, int index);
}  // namespace rg::sim
