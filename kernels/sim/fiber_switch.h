// The context switch under the sim interpreter's fibers. On x86-64 a few instructions save
// the callee-saved registers and swap stack pointers (no system call: glibc's swapcontext
// saves the signal mask with one, which made barrier-heavy kernels ~50x slower). Other
// architectures use ucontext (makecontext/swapcontext).
// Under AddressSanitizer every switch is announced to it (start/finish_switch_fiber), so it
// knows which stack is live: without that, an exception thrown on a fiber makes it unpoison
// or check the wrong stack and report errors that are not there.
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
  void (*entry)() = nullptr;  // what a prepared fiber runs first
  // The stack this context runs on, for AddressSanitizer. A fiber's comes from
  // fiber_prepare; the thread's own stack is learnt on the first switch away from it.
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* asan_fake_stack = nullptr;  // AddressSanitizer's state while switched away
};

// Prepares `ctx` so that switching to it runs entry() on [stack, stack + size). entry must
// never return: it ends with fiber_exit.
void fiber_prepare(FiberContext& ctx, char* stack, size_t size, void (*entry)());
// Saves the running context into `from` and resumes `to`.
void fiber_switch(FiberContext& from, FiberContext& to);
// Leaves the running fiber `from` for good and resumes `to`; `from` may be prepared again.
[[noreturn]] void fiber_exit(FiberContext& from, FiberContext& to);

}  // namespace rg::sim
