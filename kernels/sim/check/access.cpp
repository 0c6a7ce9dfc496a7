// sim-check: the load/store hooks SanitizerCoverage calls from the instrumented kernel
// objects (-fsanitize-coverage=...,trace-loads,trace-stores), and the per-access checks.
// An address is classified as
//   shared  this host thread's TLS block of the library, where `__shared__` (static
//           thread_local under sim) lives, minus the interpreter's own TLS; or the launch's
//           dynamic shared memory;
//   global  inside a Region of the sim allocator (see memory.cpp);
//   other   kernel parameters, the fiber's stack, host data: not checked.
// Checks: memcheck (global only: outside the live allocation), initcheck (shared: not
// written by this block; global: never written since allocation), racecheck (both spaces,
// within one block and one barrier phase; see check_race). Each access is also recorded
// for the memory-traffic metrics (metrics.cpp).
#include "core/error.h"
#include "kernels/sim/check/state.h"
#include "kernels/sim/interpreter.h"

namespace rg::sim::check {

namespace {

std::string thread_str(unsigned linear) {
  const BlockCoords* b = tls_block;
  unsigned bx = b->block_dim.x, by = b->block_dim.y;
  return str("thread (", linear % bx, ",", (linear / bx) % by, ",", linear / (bx * by), ")");
}

std::string where(const LaunchState& s, unsigned thread) {
  return str("kernel '", s.kernel, "' block (", s.block[0], ",", s.block[1], ",", s.block[2], ") ",
             thread_str(thread));
}

bool is_static_shared(const LaunchState& s, uintptr_t a) {
  if (!s.static_shared.contains(a)) return false;
  for (auto [lo, hi] : s.not_shared)
    if (a >= lo && a < hi) return false;
  return true;
}

// Ordered by a warp op: same warp, and `t` has since synchronised with the lane's clock.
bool ordered(const LaunchState& s, const Access& earlier, unsigned t) {
  return earlier.thread / 32 == t / 32 && s.clocks[t][earlier.thread % 32] >= earlier.clock;
}

void race(LaunchState& s, const Access& earlier, bool earlier_write, unsigned t, bool write,
          uintptr_t a, uintptr_t pc, const char* space) {
  const char* what =
      earlier_write ? (write ? "write after write" : "read after write") : "write after read";
  add_report(Kind::racecheck, pc, earlier.pc,
             str("racecheck: ", what, " hazard on ", space, " address 0x", std::hex, a, std::dec,
                 " between ", thread_str(earlier.thread), " and ", thread_str(t), " in ",
                 where(s, t), ": no barrier or warp op orders them"));
}

// A conflict: same phase, another thread, overlapping bytes, not ordered by a warp op.
bool conflicts(const LaunchState& s, const Access& earlier, unsigned t, uint8_t bytes) {
  return earlier.phase == s.phase && earlier.thread != t && (earlier.bytes & bytes) &&
         !ordered(s, earlier, t);
}

void check_race(LaunchState& s, RaceCell& c, unsigned t, bool write, uint8_t bytes, uintptr_t a,
                uintptr_t pc, const char* space) {
  uint32_t clock = s.clocks[t][t % 32];
  if (conflicts(s, c.write, t, bytes)) race(s, c.write, true, t, write, a, pc, space);
  Access me{s.phase, uint16_t(t), bytes, clock, pc};
  if (write) {
    for (const Access* r : {&c.read, &c.read2})
      if (conflicts(s, *r, t, bytes)) race(s, *r, false, t, write, a, pc, space);
    c.write = me;
    c.read.phase = c.read2.phase = 0;
  } else if (c.read.phase != s.phase || c.read.thread == t) {
    if (c.read.phase != s.phase) c.read2.phase = 0;
    c.read = me;
  } else {
    c.read2 = me;
  }
}

void check_races(LaunchState& s, Shadow& sh, size_t off, uint32_t size, unsigned t, bool write,
                 uintptr_t a, uintptr_t pc, const char* space) {
  for (size_t g = off / 4; g <= (off + size - 1) / 4; ++g) {
    size_t lo = std::max(off, g * 4), hi = std::min(off + size, g * 4 + 4);
    uint8_t bytes = uint8_t(((1u << (hi - lo)) - 1) << (lo - g * 4));
    check_race(s, sh.race[g], t, write, bytes, a, pc, space);
  }
}

void check_shared(LaunchState& s, Shadow& sh, uintptr_t a, uint32_t size, bool write, uintptr_t pc,
                  unsigned t) {
  size = uint32_t(std::min<uintptr_t>(size, sh.end - a));
  size_t off = a - sh.base;
  if (write) {
    for (uint32_t i = 0; i < size; ++i) sh.written[off + i] = s.block_epoch;
  } else {
    for (uint32_t i = 0; i < size; ++i)
      if (sh.written[off + i] != s.block_epoch) {
        add_report(Kind::initcheck, pc, 0,
                   str("initcheck: ", where(s, t), " reads ", size, " bytes of shared memory at 0x",
                       std::hex, a, std::dec, " that no thread of the block wrote"));
        break;
      }
  }
  check_races(s, sh, off, size, t, write, a, pc, "shared");
}

void check_global(LaunchState& s, Region& r, uintptr_t a, uint32_t size, bool write, uintptr_t pc,
                  unsigned t) {
  if (!r.live || a < r.user || a + size > r.user + r.requested) {
    std::string rel =
        !r.live ? str("inside a freed block of ", r.bytes, " bytes at 0x", std::hex, r.user)
        : a < r.user
            ? str(r.user - a, " bytes before an allocation of ", r.requested, " bytes at 0x",
                  std::hex, r.user)
            : str(a + size - (r.user + r.requested), " bytes past the end of an allocation of ",
                  r.requested, " bytes at 0x", std::hex, r.user);
    add_report(Kind::memcheck, pc, 0,
               str("memcheck: invalid ", write ? "write" : "read", " of ", size, " bytes at 0x",
                   std::hex, a, std::dec, " by ", where(s, t), ": ", rel));
    return;  // the red zone is not checked further
  }
  Shadow& sh = r.shadow;
  size_t off = a - sh.base;
  if (write) {
    for (uint32_t i = 0; i < size; ++i) sh.written[off + i] = 1;
  } else {
    for (uint32_t i = 0; i < size; ++i)
      if (!sh.written[off + i]) {
        add_report(Kind::initcheck, pc, 0,
                   str("initcheck: ", where(s, t), " reads ", size, " bytes of global memory at 0x",
                       std::hex, a, std::dec, " (offset ", a - r.user, " of an allocation of ",
                       r.requested, " bytes) never written since its allocation"));
        break;
      }
  }
  check_races(s, sh, off, size, t, write, a, pc, "global");
}

void on_access(const void* p, uint32_t size, bool write, uintptr_t pc) {
  const ThreadCoords* thread = tls_thread;
  if (!thread) return;  // host code of a kernel file, outside any CUDA thread
  LaunchState& s = launch_state();
  if (!s.active) return;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  unsigned t = thread->linear;
  pc -= 1;  // inside the call instruction: its line is the access's
  if (is_static_shared(s, a)) {
    check_shared(s, s.static_shared, a, size, write, pc, t);
    record_request(s, Space::shared, a, size, pc, t, write);
  } else if (s.dynamic_shared.contains(a)) {
    check_shared(s, s.dynamic_shared, a, size, write, pc, t);
    record_request(s, Space::shared, a, size, pc, t, write);
  } else if (Region* r = find_region(a)) {
    check_global(s, *r, a, size, write, pc, t);
    record_request(s, Space::global, a, size, pc, t, write);
  }
}

}  // namespace

}  // namespace rg::sim::check

#define RG_HOOK(n, T)                                                               \
  extern "C" void __sanitizer_cov_load##n(T* p) {                                   \
    rg::sim::check::on_access(p, n, false, uintptr_t(__builtin_return_address(0))); \
  }                                                                                 \
  extern "C" void __sanitizer_cov_store##n(T* p) {                                  \
    rg::sim::check::on_access(p, n, true, uintptr_t(__builtin_return_address(0)));  \
  }
RG_HOOK(1, uint8_t)
RG_HOOK(2, uint16_t)
RG_HOOK(4, uint32_t)
RG_HOOK(8, uint64_t)
RG_HOOK(16, __int128)
#undef RG_HOOK
