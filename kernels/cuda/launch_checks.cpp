// Launch-shape checks and launch error reporting for rg::cuda::launch (see
// portability.cuh): the same limits the sim interpreter enforces, as rg::Error.
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch_limits.h"

namespace rg::cuda {

namespace {
int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}
}  // namespace

size_t max_shared_bytes_optin() {
  static std::mutex mutex;
  static std::vector<size_t> bytes;  // per device, 0 until queried
  const int device = current_device();
  std::lock_guard lock(mutex);
  if (bytes.size() <= size_t(device)) bytes.resize(device + 1, 0);
  if (bytes[device] == 0) {
    int v = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    bytes[device] = size_t(v);
  }
  return bytes[device];
}

void opt_in_dynamic_shared(const void* kernel) {
  opt_in_once(kernel, current_device(), [](const void* k, int) {
    const size_t optin = max_shared_bytes_optin();
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, k));
    CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(optin - attr.sharedSizeBytes)));
  });
}

void check_launch_shape(const char* name, dim3 grid, dim3 block, size_t shared_bytes, bool opt_in) {
  RG_CHECK(grid.x && grid.y && grid.z && block.x && block.y && block.z, "cuda: kernel '", name,
           "' launched with an empty grid or block");
  unsigned long long threads = 1ull * block.x * block.y * block.z;
  RG_CHECK(threads <= 1024 && block.z <= 64, "cuda: kernel '", name, "' launched with ", threads,
           " threads per block (", block.x, "x", block.y, "x", block.z,
           "); the maximum is 1024 (and blockDim.z <= 64)");
  RG_CHECK(grid.y < 65536 && grid.z < 65536 && grid.x < (1u << 31), "cuda: kernel '", name,
           "' launched with grid ", grid.x, "x", grid.y, "x", grid.z);
  const size_t limit = opt_in ? max_shared_bytes_optin() : max_shared_bytes();
  RG_CHECK(shared_bytes <= limit, "cuda: kernel '", name, "' asks for ", shared_bytes,
           " bytes of dynamic shared memory; the maximum is ", limit,
           opt_in ? "" : " (LaunchConfig::opt_in_shared raises it)");
}

void check_launched(const char* name) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    RG_FAIL("cuda: launch of kernel '", name, "' failed: ", cudaGetErrorName(e), " (",
            cudaGetErrorString(e), ")");
}

}  // namespace rg::cuda
