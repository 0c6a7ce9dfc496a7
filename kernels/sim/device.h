// Internals of the sim device shared with the gpu:: host API (kernels/cuda/stream.cpp).
#pragma once
#include "kernels/cuda/caching_allocator.h"

namespace rg::sim {
gpu::CachingAllocator& allocator(int index);
size_t total_memory(int index);
}  // namespace rg::sim
