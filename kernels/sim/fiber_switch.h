// The context switch under the sim interpreter's fibers. On x86-64 a few instructions save
// the callee-saved registers and swap stack pointers (no system call: glibc's swapcontext
// saves the signal mask with one, which made barrier-heavy kernels ~50x slower). Other
// architectures use ucontext (makecontext/swapcontext).
#pragma once
#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace rg::sim {

struct FiberContext {
#if defined(__x86_64__)
  void* sp = nullptr;  // saved stack pointer; the registers sit on that stack
#else
  ucontext_t context;
#endif
};

// Prepares `ctx` so that switching to it runs entry() on [stack, stack + size). entry must
// never return: it ends by switching away for good.
void fiber_prepare(FiberContext& ctx, char* stack, size_t size, void (*entry)());
// Saves the running context into `from` and resumes `to`.
void fiber_switch(FiberContext& from, FiberContext& to);

}  // namespace rg::sim
