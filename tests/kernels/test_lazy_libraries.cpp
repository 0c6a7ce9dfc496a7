// cuBLAS, cuBLASLt and NCCL opened at first use (kernels/cuda/lazy_libraries.cpp; cuda build
// only): none of them is mapped while the process only uses the cpu, a library or symbol that
// cannot be loaded is an rg::Error naming it and every place tried, a library off the loader's
// path is found through RG_CUDA_LIBRARY_PATH, a wheel's nvidia/*/lib or CUDA_HOME, and a
// trampoline reaches the real function (the status-string functions need no GPU, so this runs
// on any machine with the toolkit).
#include <cublas_v2.h>
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <nccl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The places a CUDA library should be found, written here from the documented search order
// (kernels/cuda/lazy_libraries.h), not taken from ringgrad's loader: RG_CUDA_LIBRARY_PATH's
// folders, the soname, CUDA_HOME's lib64 and lib. (The running Python's wheels come third;
// this test is no Python process, which the first test case checks.)
std::vector<std::string> expected_places(const std::string& soname) {
  std::vector<std::string> places;
  std::stringstream dirs(env_or("RG_CUDA_LIBRARY_PATH", ""));
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty()) places.push_back(dir + "/" + soname);
  places.push_back(soname);
  const std::string home = env_or("CUDA_HOME", "/usr/local/cuda");
  places.push_back(home + "/lib64/" + soname);
  places.push_back(home + "/lib/" + soname);
  return places;
}

// Whether one of those places dlopens, asked in a forked child (so this process stays as it
// was): the test's expectation, decided without ringgrad's code.
bool loader_finds(const char* soname) {
  const std::vector<std::string> places = expected_places(soname);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (const std::string& place : places)
      if (dlopen(place.c_str(), RTLD_NOW | RTLD_LOCAL)) _exit(0);
    _exit(1);
  }
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
  CHECK_FALSE(mapped("/site-packages/"));  // no Python here: no wheels to search

  // The first call of a trampoline opens its library where the search order finds it, and is
  // an rg::Error naming it where it does not: which of the two is decided beforehand. A CUDA
  // build has the toolkit: where its files are, they must load.
  const bool cublas_found = loader_finds("libcublas.so.13");
  const bool nccl_found = loader_finds("libnccl.so.2");
  INFO("the loader finds libcublas.so.13: " << cublas_found << ", libnccl.so.2: " << nccl_found);
  const std::string home = env_or("CUDA_HOME", "/usr/local/cuda");
  if (access((home + "/lib64/libcublas.so.13").c_str(), R_OK) == 0) CHECK(cublas_found);
  if (access((home + "/lib64/libnccl.so.2").c_str(), R_OK) == 0) CHECK(nccl_found);
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

namespace {

// Sets (or unsets, for null) an environment variable for the scope.
struct EnvScope {
  std::string name;
  std::string saved;
  bool had;
  EnvScope(const char* n, const char* value) : name(n), had(std::getenv(n) != nullptr) {
    if (had) saved = std::getenv(n);
    value ? setenv(n, value, 1) : unsetenv(n);
  }
  ~EnvScope() { had ? setenv(name.c_str(), saved.c_str(), 1) : unsetenv(name.c_str()); }
};

// A temporary folder, removed with what the test put in it.
struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/rg_libsearch_XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  // A symlink `name` in `folder` (made with its parents) to `target`.
  std::string link(const std::string& folder, const std::string& name, const std::string& target) {
    std::filesystem::create_directories(path + folder);
    const std::string at = path + folder + "/" + name;
    std::filesystem::create_symlink(target, at);
    return at;
  }
};

// The toolkit's NCCL, found here by its path (the test's own knowledge), or "".
std::string toolkit_nccl() {
  const std::string path = env_or("CUDA_HOME", "/usr/local/cuda") + "/lib64/libnccl.so.2";
  return access(path.c_str(), R_OK) == 0 ? path : "";
}

// ncclGetErrorString reached through `soname`, which is only an alias of the toolkit's NCCL.
std::string nccl_error_string_via(const char* soname) {
  using Fn = const char* (*)(ncclResult_t);
  auto fn = reinterpret_cast<Fn>(rg::cuda::load_library_symbol(soname, "ncclGetErrorString"));
  return fn(ncclInvalidArgument);
}

}  // namespace

TEST_CASE("a library found nowhere: the error lists every place tried, in order") {
  EnvScope path("RG_CUDA_LIBRARY_PATH", "/rg-nonexistent-a:/rg-nonexistent-b");
  EnvScope home("CUDA_HOME", "/rg-nonexistent-cuda");
  const std::string so = "libringgrad_no_such_library.so.7";
  const std::string missing = error_of(so.c_str(), "ncclGetErrorString");
  INFO(missing);
  size_t at = 0;
  for (const std::string& place :
       {"RG_CUDA_LIBRARY_PATH: /rg-nonexistent-a/" + so,
        "RG_CUDA_LIBRARY_PATH: /rg-nonexistent-b/" + so, "the loader's search path: " + so,
        "CUDA_HOME: /rg-nonexistent-cuda/lib64/" + so, "CUDA_HOME: /rg-nonexistent-cuda/lib/" + so,
        std::string("the running Python's wheels (nvidia/*/lib): no site-packages folder")}) {
    const size_t found = missing.find(place, at);
    CHECK_MESSAGE(found != std::string::npos, place);
    if (found != std::string::npos) at = found;
  }
  CHECK(missing.find("set RG_CUDA_LIBRARY_PATH") != std::string::npos);
  CHECK(missing.find("(" + so + " was needed for ncclGetErrorString)") != std::string::npos);
}

TEST_CASE("the search order: RG_CUDA_LIBRARY_PATH, the soname, the wheels, CUDA_HOME") {
  EnvScope path("RG_CUDA_LIBRARY_PATH", "/a::/b");
  EnvScope home("CUDA_HOME", "/c");
  const auto places = rg::cuda::library_search_order("libx.so.1");
  std::vector<std::string> paths;
  for (const auto& p : places) paths.push_back(p.path);
  CHECK(paths == std::vector<std::string>{"/a/libx.so.1", "/b/libx.so.1", "libx.so.1",
                                          "/c/lib64/libx.so.1", "/c/lib/libx.so.1"});
  EnvScope unset_home("CUDA_HOME", nullptr);
  CHECK(rg::cuda::library_search_order("libx.so.1").back().path == "/usr/local/cuda/lib/libx.so.1");
}

TEST_CASE("a library off the loader's path is found through RG_CUDA_LIBRARY_PATH") {
  const std::string nccl = toolkit_nccl();
  if (nccl.empty()) {
    MESSAGE("no toolkit NCCL to alias on this machine");
    return;
  }
  TempDir dir;
  dir.link("/lib", "libringgrad_alias_a.so.2", nccl);
  CHECK(error_of("libringgrad_alias_a.so.2", "ncclGetErrorString").find("cannot load") !=
        std::string::npos);  // the loader alone does not know the folder
  EnvScope path("RG_CUDA_LIBRARY_PATH", (dir.path + "/lib").c_str());
  CHECK(nccl_error_string_via("libringgrad_alias_a.so.2").find("invalid argument") == 0);
}

TEST_CASE("a library is found in the running Python's wheels and in CUDA_HOME") {
  const std::string nccl = toolkit_nccl();
  if (nccl.empty()) {
    MESSAGE("no toolkit NCCL to alias on this machine");
    return;
  }
  TempDir dir;
  // A wheel's layout; a file of that site-packages mapped into the process, as a Python
  // process maps its extension modules.
  dir.link("/site-packages/nvidia/nccl/lib", "libringgrad_alias_b.so.2", nccl);
  const std::string marker = dir.path + "/site-packages/module.so";
  std::ofstream(marker) << std::string(4096, 'x');
  const int fd = open(marker.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  void* mapping = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  REQUIRE(mapping != MAP_FAILED);
  const auto places = rg::cuda::library_search_order("libringgrad_alias_b.so.2");
  REQUIRE(places.size() >= 3);
  CHECK(places[1].path == dir.path + "/site-packages/nvidia/nccl/lib/libringgrad_alias_b.so.2");
  CHECK(places[1].why == "the running Python's wheels");
  CHECK(nccl_error_string_via("libringgrad_alias_b.so.2").find("invalid argument") == 0);
  munmap(mapping, 4096);
  close(fd);

  dir.link("/cuda/lib64", "libringgrad_alias_c.so.2", nccl);
  EnvScope home("CUDA_HOME", (dir.path + "/cuda").c_str());
  CHECK(nccl_error_string_via("libringgrad_alias_c.so.2").find("invalid argument") == 0);
}
