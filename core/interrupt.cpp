// The interrupt flag (see interrupt.h): a lock-free atomic, so a signal handler may set it.
#include "core/interrupt.h"

#include <atomic>

#include "core/error.h"

namespace rg {

namespace {
std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the flag is set from signal handlers");
}  // namespace

void request_interrupt() { g_interrupt.store(true, std::memory_order_relaxed); }
bool interrupt_requested() { return g_interrupt.load(std::memory_order_relaxed); }
void clear_interrupt() { g_interrupt.store(false, std::memory_order_relaxed); }

void throw_if_interrupted(const char* what) {
  if (!g_interrupt.exchange(false, std::memory_order_relaxed)) return;
  RG_FAIL(what, ": interrupted");
}

}  // namespace rg
