// cp.async's commit-before-wait rule on sim: see async_copy.h. Not instrumented by
// sim-check (its state is the interpreter's, not the kernel's shared memory).
#include "kernels/sim/async_copy.h"

#include <unordered_map>

#include "core/error.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/interpreter.h"
#include "kernels/sim/stream_queue.h"

namespace rg::sim {

namespace {

// One CUDA thread's copies since its last commit, in one block of one launch.
struct Pending {
  uint64_t launch = 0;
  unsigned block[3] = {0, 0, 0};
  int uncommitted = 0;
};

// The running thread's state (fibers of this host thread, by their coordinates' address).
Pending& pending() {
  static thread_local std::unordered_map<const ThreadCoords*, Pending> states;
  Pending& p = states[tls_thread];
  const uint3 b = tls_block->block_idx;
  const uint64_t launch = launches();
  if (p.launch != launch || p.block[0] != b.x || p.block[1] != b.y || p.block[2] != b.z)
    p = Pending{launch, {b.x, b.y, b.z}, 0};
  return p;
}

}  // namespace

void async_copy_issued() { ++pending().uncommitted; }
void async_copy_commit() { pending().uncommitted = 0; }

void async_copy_wait(const CallSite& site) {
  const int n = pending().uncommitted;
  if (n == 0) return;
  const LaunchSpec* spec = current_launch();
  const std::string message =
      str("kernel '", spec ? spec->name : "?", "' thread ", tls_thread->linear,
          ": cp.async.wait_group with ", n,
          " copies issued since its last cp.async.commit_group (a wait does not cover them)");
  check::report_sync_error("synccheck: " + message, site, CallSite{});
  RG_FAIL("sim: ", message, " at ", site.file ? site.file : "??", ":", site.line);
}

}  // namespace rg::sim
