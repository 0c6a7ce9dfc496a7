// Launch limits shared by the sim interpreter and the cuda launch checks.
#pragma once
#include <cstddef>

namespace rg {
// Max dynamic shared memory per block accepted by launch() on sim and cuda (default
// 48 KiB, the CUDA limit without opt-in); a launch asking for more throws rg::Error.
void set_max_shared_bytes(size_t bytes);
size_t max_shared_bytes();

// LaunchConfig::opt_in_shared: raises `kernel`'s dynamic shared memory limit on `device` once
// (cudaFuncSetAttribute, through `raise`). The pair counts as raised only once `raise`
// returned: a call that threw is made again at the next launch, which still needs it.
void opt_in_once(const void* kernel, int device, void (*raise)(const void* kernel, int device));
}  // namespace rg
