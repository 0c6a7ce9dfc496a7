// Registration of the backends built into the library: the cpu, sim and (when built) cuda
// devices and their kernel tables. It is one explicit call, made once before the first
// device or kernel-table lookup, rather than static initialisers in each file: a linker
// drops an object file of a static library that nothing references, and its initialisers
// with it, which left a statically linked program without kernels.
#pragma once

namespace rg {

// Idempotent and thread-safe; device_interface() and kernel_table() call it.
void register_builtin_backends();

// Whether this library was built with the cuda backend.
bool cuda_backend_built();

}  // namespace rg
