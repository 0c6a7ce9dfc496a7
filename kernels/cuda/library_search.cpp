// Where cuBLAS, cuBLASLt and NCCL are looked for (see lazy_libraries.h), in order:
//   1. each folder of RG_CUDA_LIBRARY_PATH (colon-separated): the user's word comes first;
//   2. the soname alone: the system loader's search (LD_LIBRARY_PATH, the ld.so cache, the
//      system folders, the executable's RUNPATH);
//   3. the running Python's wheels, <site-packages>/nvidia/*/lib: pip's nvidia-cublas-cu13 and
//      nvidia-nccl-cu13 put the libraries there, off every default path. The site-packages
//      folders are those above this library's own file and above every file mapped into the
//      process (a Python process maps its extension modules from there);
//   4. CUDA_HOME's lib64 and lib (CUDA_HOME unset: /usr/local/cuda, as PyTorch assumes).
// The first place that dlopens wins, and the handle is kept for the soname, so every symbol of
// a library comes from the same file. When none does, one rg::Error lists each place tried
// with the loader's reason. libcublas.so needs libcublasLt.so: cuBLASLt is opened first by the
// same search, so that a libcublas found off the loader's path finds its dependency loaded.
#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cuda/lazy_libraries.h"

namespace rg::cuda {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The site-packages (or dist-packages) folder a path lies in, or "".
std::string site_packages_of(const std::string& path) {
  for (const char* name : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = path.find(name);
    if (at != std::string::npos) return path.substr(0, at + std::string(name).size() - 1);
  }
  return "";
}

std::vector<std::string> python_site_packages() {
  std::set<std::string> found;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&python_site_packages), &self) && self.dli_fname)
    if (std::string site = site_packages_of(self.dli_fname); !site.empty()) found.insert(site);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    if (std::string site = site_packages_of(line.substr(slash)); !site.empty()) found.insert(site);
  }
  return {found.begin(), found.end()};
}

std::vector<std::string> wheel_libraries(const std::string& site, const char* soname) {
  std::vector<std::string> paths;
  glob_t g{};
  if (glob((site + "/nvidia/*/lib/" + soname).c_str(), 0, nullptr, &g) == 0)
    paths.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  globfree(&g);
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

std::vector<LibraryPlace> library_search_order(const char* soname) {
  std::vector<LibraryPlace> places;
  const std::string dirs = env("RG_CUDA_LIBRARY_PATH");
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    if (end > start)
      places.push_back({dirs.substr(start, end - start) + "/" + soname, "RG_CUDA_LIBRARY_PATH"});
    start = end + 1;
  }
  places.push_back({soname, "the loader's search path"});
  for (const std::string& site : python_site_packages())
    for (const std::string& path : wheel_libraries(site, soname))
      places.push_back({path, "the running Python's wheels"});
  const std::string home = env("CUDA_HOME").empty() ? "/usr/local/cuda" : env("CUDA_HOME");
  const std::string why =
      env("CUDA_HOME").empty() ? "/usr/local/cuda (CUDA_HOME is unset)" : "CUDA_HOME";
  places.push_back({home + "/lib64/" + soname, why});
  places.push_back({home + "/lib/" + soname, why});
  return places;
}

void* open_cuda_library(const char* soname) {
  static std::mutex mutex;
  static std::map<std::string, void*> opened;  // never closed: the functions stay in use
  // cuBLAS's dependency first (outside the lock: the same search, recursively).
  const std::string name = soname;
  if (name.rfind("libcublas.so.", 0) == 0) {
    try {
      open_cuda_library(("libcublasLt.so." + name.substr(13)).c_str());
    } catch (const Error& e) {
      RG_FAIL("cuda: cannot load ", soname, ", which needs libcublasLt: ", e.what());
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = opened.find(name); it != opened.end()) return it->second;
  std::string tried;
  for (const LibraryPlace& place : library_search_order(soname)) {
    if (void* library = dlopen(place.path.c_str(), RTLD_NOW | RTLD_LOCAL))
      return opened[name] = library;
    const char* why = dlerror();
    tried += str("\n  ", place.why, ": ", place.path, ": ", why ? why : "unknown error");
  }
  if (python_site_packages().empty())
    tried += "\n  the running Python's wheels (nvidia/*/lib): no site-packages folder is mapped";
  RG_FAIL("cuda: cannot load ", soname, "; tried, in order:", tried,
          "\nIt comes with the CUDA toolkit (cuBLAS), NCCL, or pip's nvidia-cublas-cu13 / "
          "nvidia-nccl-cu13 wheels; set RG_CUDA_LIBRARY_PATH to the folder that has it");
}

}  // namespace rg::cuda
