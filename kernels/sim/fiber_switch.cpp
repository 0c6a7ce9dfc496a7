// See fiber_switch.h. x86-64 System V: rbx, rbp, r12-r15 are callee-saved; the FP control
// state is shared by all fibers of a host thread, so it needs no saving.
// A switch is bracketed by AddressSanitizer's start_switch_fiber (before, naming the target
// stack) and finish_switch_fiber (first thing on the target stack; it reports the stack that
// was left, which is how the thread's own stack bounds become known).
#include "kernels/sim/fiber_switch.h"

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define RG_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RG_ASAN_FIBERS 1
#endif
#endif
#if RG_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__)
extern "C" void rg_sim_switch_stacks(void** save_sp, void* new_sp);
asm(R"(
.text
.globl rg_sim_switch_stacks
.hidden rg_sim_switch_stacks
.type rg_sim_switch_stacks,@function
rg_sim_switch_stacks:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size rg_sim_switch_stacks,.-rg_sim_switch_stacks
.section .note.GNU-stack,"",@progbits
.text
)");
#endif

namespace rg::sim {

namespace {

// The contexts of the switch in progress on this host thread.
thread_local FiberContext* switching_from = nullptr;
thread_local FiberContext* switching_to = nullptr;

void start_switch(FiberContext& from, FiberContext& to, bool from_ends) {
  switching_from = &from;
  switching_to = &to;
#if RG_ASAN_FIBERS
  __sanitizer_start_switch_fiber(from_ends ? nullptr : &from.asan_fake_stack, to.stack_bottom,
                                 to.stack_size);
#else
  (void)from_ends;
#endif
}

// Runs on the stack just switched to; `self` is the context now running.
void finish_switch(FiberContext& self) {
#if RG_ASAN_FIBERS
  const void* left_bottom = nullptr;
  size_t left_size = 0;
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, &left_bottom, &left_size);
  switching_from->stack_bottom = left_bottom;
  switching_from->stack_size = left_size;
#else
  (void)self;
#endif
}

// The first code a prepared fiber runs.
void fiber_start() {
  FiberContext& self = *switching_to;
  self.asan_fake_stack = nullptr;
  finish_switch(self);
  self.entry();
  __builtin_unreachable();
}

void switch_stacks(FiberContext& from, FiberContext& to);

// A fiber's stack is reused by the next fiber prepared on it. The frames the previous one
// never returned through (fiber_start, its entry, fiber_exit) sit at the top and keep their
// redzones poisoned; deeper frames returned, or were unwound by an exception, which
// AddressSanitizer unpoisons itself. Clearing the top of the stack is enough.
void forget_previous_fiber(char* stack, size_t size) {
#if RG_ASAN_FIBERS
  size_t top = size < 16384 ? size : 16384;
  __asan_unpoison_memory_region(stack + size - top, top);
#else
  (void)stack;
  (void)size;
#endif
}

}  // namespace

void fiber_switch(FiberContext& from, FiberContext& to) {
  start_switch(from, to, false);
  switch_stacks(from, to);
  finish_switch(from);
}

void fiber_exit(FiberContext& from, FiberContext& to) {
  start_switch(from, to, true);
  switch_stacks(from, to);
  __builtin_unreachable();
}

#if defined(__x86_64__)

void fiber_prepare(FiberContext& ctx, char* stack, size_t size, void (*entry)()) {
  forget_previous_fiber(stack, size);
  ctx.entry = entry;
  ctx.stack_bottom = stack;
  ctx.stack_size = size;
  auto top = reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15);
  auto* slot = reinterpret_cast<void**>(top);
  slot[-1] = nullptr;                               // fake return address (ends backtraces)
  slot[-2] = reinterpret_cast<void*>(fiber_start);  // where `ret` goes
  for (int i = 3; i <= 8; ++i) slot[-i] = nullptr;  // r15 .. rbp
  ctx.sp = &slot[-8];
}

namespace {
void switch_stacks(FiberContext& from, FiberContext& to) { rg_sim_switch_stacks(&from.sp, to.sp); }
}  // namespace

#else

void fiber_prepare(FiberContext& ctx, char* stack, size_t size, void (*entry)()) {
  forget_previous_fiber(stack, size);
  ctx.entry = entry;
  ctx.stack_bottom = stack;
  ctx.stack_size = size;
  getcontext(&ctx.context);
  ctx.context.uc_stack.ss_sp = stack;
  ctx.context.uc_stack.ss_size = size;
  ctx.context.uc_link = nullptr;
  makecontext(&ctx.context, fiber_start, 0);
}

namespace {
void switch_stacks(FiberContext& from, FiberContext& to) {
  swapcontext(&from.context, &to.context);
}
}  // namespace

#endif

}  // namespace rg::sim
