// cuBLAS, cuBLASLt and NCCL opened at first use (kernels/cuda/lazy_libraries.cpp; cuda build
// only): none of them is mapped while the process only uses the cpu, a library or symbol that
// cannot be loaded is an rg::Error naming it, and a trampoline reaches the real function (the
// status-string functions need no GPU, so this runs on any machine with the toolkit).
#include <cublas_v2.h>
#include <doctest/doctest.h>
#include <nccl.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "kernels/cuda/lazy_libraries.h"
#include "ringgrad.h"

namespace {

// Whether a file whose name contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

std::string error_of(const char* soname, const char* symbol) {
  try {
    rg::cuda::load_library_symbol(soname, symbol);
  } catch (const rg::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cuBLAS and NCCL stay unmapped on the cpu, and load at first call") {
  // cpu work through the whole library: nothing opens the GPU libraries.
  rg::Tensor a = rg::ones({8, 8});
  rg::Tensor b = rg::matmul(a, a);
  CHECK(b.sum().item() == 512);
  CHECK_FALSE(mapped("libcublas.so"));
  CHECK_FALSE(mapped("libcublasLt.so"));
  CHECK_FALSE(mapped("libnccl.so"));

  // The first call of a trampoline opens its library (or says why it cannot).
  try {
    const char* s = cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);
    REQUIRE(s != nullptr);
    CHECK(std::string(s) == "the library was not initialized");
    CHECK(mapped("libcublas.so.13"));
  } catch (const rg::Error& e) {
    CHECK(std::string(e.what()).find("libcublas.so.13") != std::string::npos);
  }
  CHECK_FALSE(mapped("libnccl.so"));
  try {
    const char* s = ncclGetErrorString(ncclInvalidArgument);
    REQUIRE(s != nullptr);
    CHECK(std::string(s).find("invalid argument") == 0);
    CHECK(mapped("libnccl.so.2"));
  } catch (const rg::Error& e) {
    CHECK(std::string(e.what()).find("libnccl.so.2") != std::string::npos);
  }
}

TEST_CASE("a library or function that cannot be loaded is an rg::Error naming it") {
  std::string missing = error_of("libringgrad_no_such_library.so.7", "cublasCreate_v2");
  CHECK(missing.find("cannot load libringgrad_no_such_library.so.7") != std::string::npos);
  CHECK(missing.find("cublasCreate_v2") != std::string::npos);
  // dlerror()'s reason comes along
  CHECK(missing.find("No such file") != std::string::npos);

  std::string no_symbol = error_of("libc.so.6", "rg_no_such_function");
  CHECK(no_symbol.find("libc.so.6 has no function rg_no_such_function") != std::string::npos);

  CHECK(rg::cuda::load_library_symbol("libc.so.6", "strlen") != nullptr);
}
