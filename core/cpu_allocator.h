// The caching allocator of host memory (the cpu device; core/cpu_allocator.cpp): freed
// blocks are kept by size class and handed out again, and sizes are rounded up to the class.
//
// So that AddressSanitizer still sees a read past a tensor's end and a use after free, under
// it the allocator poisons (ASAN_POISON_MEMORY_REGION) the bytes of a block past the size
// asked for when it hands the block out, and the whole block but its last word (the free
// list's link) while it is cached; such reads are reported as "use-after-poison".
//
// RG_CPU_ALLOCATOR_CACHING=0 turns caching off in any build, as PYTORCH_NO_CUDA_MEMORY_CACHING
// does for PyTorch's CUDA allocator: every free returns the block to the system (std::free;
// a block of the shareable arena gives back its pages and keeps only its address), so that
// AddressSanitizer reports a use after free as "heap-use-after-free" with where it was freed,
// or to measure without the cache. Unset, empty or 1: caching on. Read once, at the first
// allocation; any other value makes that allocation an rg::Error naming the variable.
#pragma once

namespace rg {

// Whether the cpu allocator caches freed blocks, given the value of RG_CPU_ALLOCATOR_CACHING
// (nullptr when unset). Throws rg::Error naming the variable and the value when it is
// neither unset, empty, 0 nor 1.
bool cpu_allocator_caching(const char* value);

}  // namespace rg
