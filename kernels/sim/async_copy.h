// The ordering rule of cp.async that sim checks (kernels/cuda/ldmatrix.cuh copies at once,
// an eager completion the PTX ISA allows): cp.async.wait_group waits only for committed
// groups, so a wait while copies issued since the thread's last commit_group are pending
// would, on a GPU, leave those copies in flight; sim makes it a synccheck error naming the
// wait's line. (A reader in another thread not ordered after the copy by a barrier is
// sim-check's racecheck: the copy is the issuing thread's store.) State is per CUDA thread,
// reset for each block of each launch.
#pragma once

namespace rg::sim {

struct CallSite;  // interpreter.h

void async_copy_issued();  // a cp.async by the running thread
void async_copy_commit();  // its cp.async.commit_group
// cp.async.wait_group: throws rg::Error (and reports synccheck) over uncommitted copies.
void async_copy_wait(const CallSite& site);

}  // namespace rg::sim
