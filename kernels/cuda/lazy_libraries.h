// cuBLAS, cuBLASLt and NCCL loaded at first use (cuda build only; see lazy_libraries.cpp).
// The library is linked against cudart alone: each cuBLAS/cuBLASLt/NCCL function the project
// calls is defined by lazy_libraries.cpp as a trampoline that opens the real library on its
// first call, so a CPU run never maps them (libcublasLt alone is a 541 MB file).
#pragma once
#include <string>
#include <vector>

namespace rg::cuda {

// The trampolines open libcublas.so.N and libcublasLt.so.N (N = CUBLAS_VER_MAJOR of the headers
// built against: 13) and libnccl.so.NCCL_MAJOR (2), each by open_cuda_library, then
// dlsym(symbol): the address of the real function. Throws rg::Error naming the library, the
// symbol and why when either fails. Thread-safe; the library stays loaded for the life of the
// process.
void* load_library_symbol(const char* soname, const char* symbol);

// One place a library is looked for: the path to dlopen, and why it is tried there.
struct LibraryPlace {
  std::string path;
  std::string why;  // "RG_CUDA_LIBRARY_PATH", "the loader's search path", ...
};
// The places, in order (kernels/cuda/library_search.cpp): each folder of RG_CUDA_LIBRARY_PATH,
// the soname on the loader's search path, the running Python's wheels
// (<site-packages>/nvidia/*/lib), CUDA_HOME's lib64 and lib (/usr/local/cuda when unset).
std::vector<LibraryPlace> library_search_order(const char* soname);
// dlopen(RTLD_NOW | RTLD_LOCAL) of the first place that works, kept per soname; throws
// rg::Error listing every place tried, with the loader's reason, when none does.
void* open_cuda_library(const char* soname);

}  // namespace rg::cuda
