// Launch limits shared by the sim interpreter and the cuda launch checks.
#pragma once
#include <cstddef>

namespace rg {
// Max dynamic shared memory per block accepted by launch() on sim and cuda (default
// 48 KiB, the CUDA limit without opt-in); a launch asking for more throws rg::Error.
void set_max_shared_bytes(size_t bytes);
size_t max_shared_bytes();
}  // namespace rg
