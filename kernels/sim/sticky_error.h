// Sticky errors on sim, as a GPU has them: a device fault inside a kernel (the dialect's
// __trap(): cudaErrorLaunchFailure) poisons the context of its device, and from then on every
// launch, event query, synchronization, synchronous copy and cudaMalloc on that device fails
// with the same error, naming itself -- as on cuda, where only a new process recovers. So the
// code that polls, waits or launches after a fault (the DDP watchdog, the reducer, a training
// loop) meets on sim the exceptions it meets on a GPU. Errors a GPU does not make sticky (a bad
// launch shape, a bad index reported by device_errors.h, sim's own synccheck and sim-check's
// reports) stay ordinary: the next launch runs.
#pragma once
#include <string>

namespace rg::sim {

// Makes `error` sim:index's sticky error (the first one stays).
void set_sticky_error(int index, const std::string& error);
// Throws rg::Error "<operation> on sim:<index> failed: <the sticky error>" when it has one
// (`kernel`, when given, is named after the operation).
void check_sticky_error(int index, const char* operation, const char* kernel = nullptr);
bool has_sticky_error(int index);
// What no GPU can do: forgets sim:index's sticky error, so that a test process goes on
// after a test that faulted on purpose.
void clear_sticky_error_for_tests(int index);

// The dialect's __trap() calls sim::trap (interpreter.h, defined in sticky_error.cpp).

}  // namespace rg::sim
