#include "kernels/builtin.h"

#include <mutex>
#include <string_view>

#include "core/cpu_capability.h"
#include "core/device_interface.h"
#include "core/op_table.h"
#include "kernels/builtin_kernels.h"

namespace rg {

#define RG_DECLARE_REGISTER(file) void register_##file##_kernels(KernelTable& k);
// One namespace of cpu kernels per capability (kernels/cpu/capability.h), each with every file.
#define RG_DECLARE_CPU_CAPABILITY(capability) \
  namespace cpu::capability {                 \
  RG_CPU_KERNEL_FILES(RG_DECLARE_REGISTER)    \
  }
RG_CPU_CAPABILITIES(RG_DECLARE_CPU_CAPABILITY)
#undef RG_DECLARE_CPU_CAPABILITY
namespace sim {
void register_sim_device();  // kernels/sim/device.cpp
RG_GPU_KERNEL_FILES(RG_DECLARE_REGISTER)
}  // namespace sim
#if RG_WITH_CUDA
namespace cuda {
void register_cuda_device();  // kernels/cuda/runtime.cpp
RG_GPU_KERNEL_FILES(RG_DECLARE_REGISTER)
}  // namespace cuda
#endif
#undef RG_DECLARE_REGISTER

namespace {

// The cpu kernel table is filled from the files of the capability the CPU runs.
void register_cpu_kernels(KernelTable& table) {
  const char* chosen = cpu_capability_name(cpu_capability());
#define RG_REGISTER_FILE(file) register_##file##_kernels(table);
#define RG_REGISTER_CPU_CAPABILITY(capability)   \
  if (std::string_view(chosen) == #capability) { \
    using namespace cpu::capability;             \
    RG_CPU_KERNEL_FILES(RG_REGISTER_FILE)        \
    return;                                      \
  }
  RG_CPU_CAPABILITIES(RG_REGISTER_CPU_CAPABILITY)
#undef RG_REGISTER_CPU_CAPABILITY
#undef RG_REGISTER_FILE
  RG_FAIL("cpu kernels: none built for capability ", chosen);
}

}  // namespace

bool sim_backend_built() { return RG_WITH_SIM; }

bool cuda_backend_built() {
#if RG_WITH_CUDA
  return true;
#else
  return false;
#endif
}

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_kernels(unchecked_kernel_table(DeviceType::cpu));
#if RG_WITH_SIM
    sim::register_sim_device();
    KernelTable& sim_table = unchecked_kernel_table(DeviceType::sim);
#define RG_REGISTER_SIM(file) sim::register_##file##_kernels(sim_table);
    RG_GPU_KERNEL_FILES(RG_REGISTER_SIM)
#undef RG_REGISTER_SIM
#endif
#if RG_WITH_CUDA
    cuda::register_cuda_device();
    KernelTable& cuda_table = unchecked_kernel_table(DeviceType::cuda);
#define RG_REGISTER_CUDA(file) cuda::register_##file##_kernels(cuda_table);
    RG_GPU_KERNEL_FILES(RG_REGISTER_CUDA)
#undef RG_REGISTER_CUDA
#endif
  });
}

KernelTable& kernel_table(DeviceType type) {
  register_builtin_backends();
  return unchecked_kernel_table(type);
}

namespace {
// Core's device lookups run the loader; installed when this object is linked (see builtin.h).
[[maybe_unused]] const bool g_loader_installed =
    (set_backend_loader(&register_builtin_backends), true);
}  // namespace

}  // namespace rg
