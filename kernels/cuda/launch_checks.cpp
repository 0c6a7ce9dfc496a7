// Launch-shape checks and launch error reporting for rg::cuda::launch (see
// portability.cuh): the same limits the sim interpreter enforces, as rg::Error.
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/launch_limits.h"

namespace rg::cuda {

void check_launch_shape(const char* name, dim3 grid, dim3 block, size_t shared_bytes) {
  RG_CHECK(grid.x && grid.y && grid.z && block.x && block.y && block.z, "cuda: kernel '", name,
           "' launched with an empty grid or block");
  unsigned long long threads = 1ull * block.x * block.y * block.z;
  RG_CHECK(threads <= 1024 && block.z <= 64, "cuda: kernel '", name, "' launched with ", threads,
           " threads per block (", block.x, "x", block.y, "x", block.z,
           "); the maximum is 1024 (and blockDim.z <= 64)");
  RG_CHECK(grid.y < 65536 && grid.z < 65536 && grid.x < (1u << 31), "cuda: kernel '", name,
           "' launched with grid ", grid.x, "x", grid.y, "x", grid.z);
  RG_CHECK(shared_bytes <= max_shared_bytes(), "cuda: kernel '", name, "' asks for ", shared_bytes,
           " bytes of dynamic shared memory; the maximum is ", max_shared_bytes());
}

void check_launched(const char* name) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    RG_FAIL("cuda: launch of kernel '", name, "' failed: ", cudaGetErrorName(e), " (",
            cudaGetErrorString(e), ")");
}

}  // namespace rg::cuda
