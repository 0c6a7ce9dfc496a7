#include "kernels/builtin.h"

#include <mutex>

#include "core/device_interface.h"
#include "core/op_table.h"
#include "kernels/builtin_kernels.h"

namespace rg {

#define RG_DECLARE_REGISTER(file) void register_##file##_kernels(KernelTable& k);
namespace cpu {
RG_CPU_KERNEL_FILES(RG_DECLARE_REGISTER)
}
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
    KernelTable& cpu_table = unchecked_kernel_table(DeviceType::cpu);
#define RG_REGISTER_CPU(file) cpu::register_##file##_kernels(cpu_table);
    RG_CPU_KERNEL_FILES(RG_REGISTER_CPU)
#undef RG_REGISTER_CPU
    sim::register_sim_device();
    KernelTable& sim_table = unchecked_kernel_table(DeviceType::sim);
#define RG_REGISTER_SIM(file) sim::register_##file##_kernels(sim_table);
    RG_GPU_KERNEL_FILES(RG_REGISTER_SIM)
#undef RG_REGISTER_SIM
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
