// cuBLAS, cuBLASLt and NCCL opened at first use (kernels/cuda/lazy_libraries.cpp; cuda build
// only): none of them is mapped while the process only uses the cpu, a library or symbol that
// cannot be loaded is an rg::Error naming it, and a trampoline reaches the real function (the
// status-string functions need no GPU, so this runs on any machine with the toolkit).
#include <cublas_v2.h>
#include <doctest/doctest.h>
#include <nccl.h>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

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

// Whether the system's loader finds `soname`, asked in a forked child (so this process stays
// as it was): the test's expectation, decided without ringgrad's code.
bool loader_finds(const char* soname) {
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(dlopen(soname, RTLD_NOW | RTLD_LOCAL) ? 0 : 1);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
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

  // The first call of a trampoline opens its library where the loader finds it, and is an
  // rg::Error naming it where it does not: which of the two is decided beforehand.
  const bool cublas_found = loader_finds("libcublas.so.13");
  const bool nccl_found = loader_finds("libnccl.so.2");
  INFO("the loader finds libcublas.so.13: " << cublas_found << ", libnccl.so.2: " << nccl_found);
  std::string cublas_error;
  try {
    const char* s = cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);
    REQUIRE(s != nullptr);
    CHECK(std::string(s) == "the library was not initialized");
  } catch (const rg::Error& e) {
    cublas_error = e.what();
  }
  CHECK(mapped("libcublas.so.13") == cublas_found);
  if (cublas_found)
    CHECK(cublas_error.empty());
  else
    CHECK(cublas_error.find("libcublas.so.13") != std::string::npos);
  CHECK_FALSE(mapped("libnccl.so"));
  std::string nccl_error;
  try {
    const char* s = ncclGetErrorString(ncclInvalidArgument);
    REQUIRE(s != nullptr);
    CHECK(std::string(s).find("invalid argument") == 0);
  } catch (const rg::Error& e) {
    nccl_error = e.what();
  }
  CHECK(mapped("libnccl.so.2") == nccl_found);
  if (nccl_found)
    CHECK(nccl_error.empty());
  else
    CHECK(nccl_error.find("libnccl.so.2") != std::string::npos);
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
