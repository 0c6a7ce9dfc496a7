// See fiber_switch.h. x86-64 System V: rbx, rbp, r12-r15 are callee-saved; the FP control
// state is shared by all fibers of a host thread, so it needs no saving.
#include "kernels/sim/fiber_switch.h"

#include <cstdint>

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

#if defined(__x86_64__)

void fiber_prepare(FiberContext& ctx, char* stack, size_t size, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15);
  auto* slot = reinterpret_cast<void**>(top);
  slot[-1] = nullptr;                         // fake return address of entry (ends backtraces)
  slot[-2] = reinterpret_cast<void*>(entry);  // where `ret` goes
  for (int i = 3; i <= 8; ++i) slot[-i] = nullptr;  // r15 .. rbp
  ctx.sp = &slot[-8];
}

void fiber_switch(FiberContext& from, FiberContext& to) { rg_sim_switch_stacks(&from.sp, to.sp); }

#else

void fiber_prepare(FiberContext& ctx, char* stack, size_t size, void (*entry)()) {
  getcontext(&ctx.context);
  ctx.context.uc_stack.ss_sp = stack;
  ctx.context.uc_stack.ss_size = size;
  ctx.context.uc_link = nullptr;
  makecontext(&ctx.context, entry, 0);
}

void fiber_switch(FiberContext& from, FiberContext& to) { swapcontext(&from.context, &to.context); }

#endif

}  // namespace rg::sim
