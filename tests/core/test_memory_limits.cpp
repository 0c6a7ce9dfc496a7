// The memory limits errors name (core/memory_limits.h): RAM, RLIMIT_AS and the cgroup's limit,
// the smallest in force; an allocation or a thread that fails names it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/memory_limits.h"

using namespace rg;

namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

TEST_CASE("the cgroup's memory limit is the smallest on the way up from its cgroup") {
  const fs::path root = fs::temp_directory_path() / ("rg-cgroup-" + std::to_string(getpid()));
  write(root / "job/memory.max", "1073741824");                     // v2: 1 GiB on the parent
  write(root / "job/step/memory.max", "max");                       // the child sets none
  write(root / "memory/slurm/memory.limit_in_bytes", "536870912");  // v1: 512 MiB
  write(root / "memory/slurm/uid/memory.limit_in_bytes", "9223372036854771712");  // none
  auto v2 = cgroup_memory_limits("0::/job/step\n", root.string());
  REQUIRE(v2.size() == 1);
  CHECK(v2[0].bytes == (uint64_t(1) << 30));
  CHECK(v2[0].source == "cgroup memory.max");
  auto both = cgroup_memory_limits("4:memory:/slurm/uid\n0::/job/step\n", root.string());
  REQUIRE(both.size() == 2);
  CHECK(both[0].bytes == (uint64_t(1) << 29));  // smallest first
  CHECK(both[0].source == "cgroup memory.limit_in_bytes");
  CHECK(cgroup_memory_limits("0::/nowhere\n4:cpu,cpuacct:/x\n", root.string()).empty());
  fs::remove_all(root);
}

TEST_CASE("the limits are listed smallest first, RAM among them, and described") {
  const auto limits = memory_limits();
  REQUIRE(!limits.empty());
  bool ram = false;
  for (size_t i = 0; i < limits.size(); ++i) {
    ram = ram || limits[i].source == "RAM";
    if (i) CHECK(limits[i - 1].bytes <= limits[i].bytes);
  }
  CHECK(ram);
  CHECK(describe_memory_limit().find(limits[0].source) == 0);
  CHECK(bytes_str(uint64_t(3) << 29) == "1.5 GiB");
  CHECK(bytes_str(300) == "300 bytes");
  const std::string e = allocation_error("cpu allocator", uint64_t(1) << 40).what();
  CHECK(e.find("cpu allocator: out of memory allocating 1099511627776 bytes (1 TiB); the limit "
               "in force: ") == 0);
}

}  // namespace
