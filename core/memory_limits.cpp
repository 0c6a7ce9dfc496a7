// The memory limits of this process; see core/memory_limits.h.
#include "core/memory_limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace rg {
namespace {

constexpr uint64_t kUnlimited = uint64_t(1) << 62;  // v1 writes 2^63 - 4096 for "none"

// The number in `path` ("max" and anything unreadable: none).
uint64_t read_limit(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  return *end == '\0' && v > 0 && v < kUnlimited ? v : 0;
}

// The smallest `file` limit from `dir` + `path` up to `dir` (a cgroup's limit binds its
// children); 0 for none.
uint64_t smallest_on_the_way_up(const std::string& dir, std::string path, const char* file) {
  uint64_t smallest = 0;
  for (;;) {
    std::string at = dir + path;
    if (at.back() != '/') at += '/';
    const uint64_t v = read_limit(at + file);
    if (v && (!smallest || v < smallest)) smallest = v;
    if (path.empty() || path == "/") break;
    path = path.substr(0, path.find_last_of('/'));
  }
  return smallest;
}

}  // namespace

std::vector<MemoryLimit> cgroup_memory_limits(const std::string& proc_self_cgroup,
                                              const std::string& root) {
  std::vector<MemoryLimit> out;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path"; v2 is "0::path"
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers(1, ',');  // ",memory," or ",," (v2), for a whole-name search
    controllers.append(line, a + 1, b - a - 1).push_back(',');
    const std::string path = line.substr(b + 1);
    uint64_t v = 0;
    std::string source;
    if (controllers == ",,") {
      v = smallest_on_the_way_up(root, path, "memory.max");
      source = "cgroup memory.max";
    } else if (controllers.find(",memory,") != std::string::npos) {
      v = smallest_on_the_way_up(root + "/memory", path, "memory.limit_in_bytes");
      source = "cgroup memory.limit_in_bytes";
    }
    if (v) out.push_back({v, source});
  }
  std::sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.bytes < y.bytes; });
  return out;
}

std::vector<MemoryLimit> memory_limits() {
  std::vector<MemoryLimit> out;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  out.push_back({pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : kUnlimited, "RAM"});
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    out.push_back({uint64_t(as.rlim_cur), "RLIMIT_AS"});
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  for (const MemoryLimit& l : cgroup_memory_limits(text.str(), "/sys/fs/cgroup")) out.push_back(l);
  std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return x.bytes < y.bytes; });
  return out;
}

std::string bytes_str(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) v /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.3g %s", v, units[u]);
  return text;
}

std::string describe_memory_limit() {
  const std::vector<MemoryLimit> limits = memory_limits();
  std::string out = limits[0].source + " " + bytes_str(limits[0].bytes);
  if (limits.size() == 1) return out;
  out += " (the smallest of ";
  for (size_t i = 0; i < limits.size(); ++i)
    out += (i ? ", " : "") + limits[i].source + " " + bytes_str(limits[i].bytes);
  return out + ")";
}

namespace {
// describe_memory_limit, or less when there is no memory left even for that.
std::string limit_in_force() noexcept {
  try {
    return "; the limit in force: " + describe_memory_limit();
  } catch (...) {
    return "";
  }
}
}  // namespace

Error thread_start_error(const char* what, const std::system_error& e) {
  return Error(str(what, ": could not start a thread: ", e.what(),
                   " (its stack could not be mapped?)", limit_in_force()));
}

Error allocation_error(const std::string& what, uint64_t nbytes) {
  return Error(str(what, ": out of memory allocating ", nbytes, " bytes (", bytes_str(nbytes), ")",
                   limit_in_force()));
}

}  // namespace rg
