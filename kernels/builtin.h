// Registration of the backends built into the library: the sim and (when built) cuda
// devices and the kernel tables of cpu, sim and cuda, and the lookup every kernel call goes
// through. Registration is one explicit call, made before the first kernel-table lookup,
// rather than static initialisers in each kernel file: a linker drops an object file of a
// static library that nothing references, and its initialisers with it, which left a
// statically linked program without kernels. Every user of kernel_table()/RG_KERNEL
// references this file, so it is always linked; it then also installs
// register_builtin_backends as core's backend loader (core/device_interface.h), so a
// tensor can be allocated on sim before any kernel ran.
#pragma once
#include "core/op_table.h"

namespace rg {

// Idempotent and thread-safe; kernel_table() and core's device lookups call it.
void register_builtin_backends();

// Whether this library was built with the sim device (-Dsim=true) and the cuda backend.
bool sim_backend_built();
bool cuda_backend_built();

// The kernel table of `type`, with the built-in backends registered.
KernelTable& kernel_table(DeviceType type);

}  // namespace rg

// The kernel `name` to call for a tensor on `device`; throws naming it if the device lacks it.
#define RG_KERNEL(device, name)                 \
  (::rg::kernel_table((device).type).name       \
       ? ::rg::kernel_table((device).type).name \
       : (RG_FAIL(#name ": no kernel for device ", (device).str()), nullptr))
