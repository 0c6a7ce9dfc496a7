// bench/kernels --environment: the CUDA runtime (linked statically or not) and the driver
// it found, each GPU, and for each library ringgrad opens lazily the file it loads, or every
// place it tried. bench/gpu_check.sh's first step; on a build without CUDA it says so.
#include "bench/kernels_environment.h"

#include <cstdio>

#if RG_WITH_CUDA
#include <cublas_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <link.h>
#include <nccl.h>

#include <string>

#include "core/error.h"
#include "kernels/cuda/lazy_libraries.h"
#endif

namespace rg::bench {

#if RG_WITH_CUDA
namespace {

void print_versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);  // 0 when no driver (libcuda.so.1) is found
  std::printf("cuda runtime %d.%d (in this build); driver supports up to %d.%d%s\n", runtime / 1000,
              runtime % 1000 / 10, driver / 1000, driver % 1000 / 10,
              driver == 0 ? " (no CUDA driver found)" : "");
}

void print_gpus() {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    std::printf("GPUs: none usable (%s)\n", cudaGetErrorString(e));
    return;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, i);
    std::printf("GPU %d: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MiB\n", i, p.name, p.major, p.minor,
                p.multiProcessorCount, p.totalGlobalMem / 1073741824.0, p.l2CacheSize / 1048576.0);
  }
}

void print_library(const std::string& soname) {
  try {
    void* handle = rg::cuda::open_cuda_library(soname.c_str());
    link_map* map = nullptr;
    const bool named = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name;
    std::printf("%s: loaded from %s\n", soname.c_str(), named ? map->l_name : "(unknown path)");
  } catch (const rg::Error& e) {
    std::printf("%s: NOT FOUND: %s\n", soname.c_str(), e.what());
  }
}

}  // namespace

int print_environment() {
  print_versions();
  print_gpus();
  const std::string cublas = std::to_string(CUBLAS_VER_MAJOR);
  for (const std::string& soname : {"libcublasLt.so." + cublas, "libcublas.so." + cublas,
                                    "libnccl.so." + std::to_string(NCCL_MAJOR)})
    print_library(soname);
  return 0;
}
#else
int print_environment() {
  std::printf("this ringgrad is built without CUDA (no runtime, GPU or libraries to report)\n");
  return 0;
}
#endif

}  // namespace rg::bench
