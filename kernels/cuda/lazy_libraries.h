// cuBLAS, cuBLASLt and NCCL loaded at first use (cuda build only; see lazy_libraries.cpp).
// The library is linked against cudart alone: each cuBLAS/cuBLASLt/NCCL function the project
// calls is defined by lazy_libraries.cpp as a trampoline that opens the real library on its
// first call, so a CPU run never maps them (libcublasLt alone is a 541 MB file).
#pragma once

namespace rg::cuda {

// The trampolines open libcublas.so.N and libcublasLt.so.N (N = CUBLAS_VER_MAJOR of the headers
// built against: 13) and libnccl.so.NCCL_MAJOR (2).
// dlopen(soname, RTLD_NOW | RTLD_LOCAL), then dlsym(symbol): the address of the real function.
// Throws rg::Error naming the library, the symbol and dlerror() when either fails. Thread-safe;
// the library stays loaded for the life of the process.
void* load_library_symbol(const char* soname, const char* symbol);

}  // namespace rg::cuda
