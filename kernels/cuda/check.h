// Error checks for CUDA runtime and cuBLAS calls (cuda build only). Every failure becomes
// an rg::Error naming the call, file:line and the library's error string.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "core/error.h"

#define CUDA_CHECK(call)                                                          \
  do {                                                                            \
    cudaError_t rg_err_ = (call);                                                 \
    if (rg_err_ != cudaSuccess)                                                   \
      RG_FAIL("cuda: ", #call, " failed at ", __FILE__, ":", __LINE__, ": ",      \
              cudaGetErrorName(rg_err_), " (", cudaGetErrorString(rg_err_), ")"); \
  } while (0)

#define CUBLAS_CHECK(call)                                                     \
  do {                                                                         \
    cublasStatus_t rg_status_ = (call);                                        \
    if (rg_status_ != CUBLAS_STATUS_SUCCESS)                                   \
      RG_FAIL("cublas: ", #call, " failed at ", __FILE__, ":", __LINE__, ": ", \
              cublasGetStatusString(rg_status_));                              \
  } while (0)

namespace rg::cuda {
// Throws rg::Error naming the kernel when the block/grid/shared memory exceed the limits
// (the same rules the sim interpreter applies).
// (opt_in: the kernel's dynamic shared limit was raised to max_shared_bytes_optin()).
void check_launch_shape(const char* name, dim3 grid, dim3 block, size_t shared_bytes,
                        bool opt_in = false);
// The current device's cudaDevAttrMaxSharedMemoryPerBlockOptin (227 KiB on an H200),
// queried once per device.
size_t max_shared_bytes_optin();
// Raises `kernel`'s cudaFuncAttributeMaxDynamicSharedMemorySize on the current device to
// max_shared_bytes_optin() less its static shared memory, once per kernel and device.
void opt_in_dynamic_shared(const void* kernel);
// Throws rg::Error naming the kernel when the launch itself failed.
void check_launched(const char* name);
}  // namespace rg::cuda
