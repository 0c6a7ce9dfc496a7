// A device fault on sim, for tests (kernels/sim/sticky_error.h): a kernel in which one thread
// executes __trap(), launched on a device's compute stream. The device then has a sticky
// error, as a GPU would; ClearStickyError forgets it at the end of the test's scope, which no
// GPU allows, so that the test process goes on.
#pragma once
#include <string>

#include "kernels/cuda/portability.cuh"
#include "kernels/cuda/stream.h"

namespace rg::test {

inline void trap_kernel(unsigned faulting_thread) {
  if (threadIdx.x == faulting_thread) __trap();
}

// The launch's error (the kernel ends at the trap); with `faulting_thread` past the block's 32
// threads, no thread traps.
inline std::string fault_device(Device device, unsigned faulting_thread = 5) {
  sim::LaunchConfig config;
  config.name = "trap_kernel";
  config.grid = dim3(1);
  config.block = dim3(32);
  config.stream = gpu::compute_stream(device).handle;
  config.uses_sync = false;
  try {
    sim::launch(trap_kernel, config, faulting_thread);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct ClearStickyError {
  int index;
  ~ClearStickyError() { sim::clear_sticky_error_for_tests(index); }
};

}  // namespace rg::test
