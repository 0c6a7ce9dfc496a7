// The memory this process may use, and what sets it. Three limits can bind: the machine's RAM,
// the address-space limit (RLIMIT_AS: `ulimit -v`, `prlimit --as`) and the memory limit of
// the process's cgroup (cgroup v2 `memory.max`, v1 `memory.limit_in_bytes`, the smallest on
// the way from its cgroup up to the root: what a container or a Slurm job sets). Errors about
// memory name the one in force, so "out of memory" under a 2 GiB RLIMIT_AS on a 64 GiB machine
// says so, and an allocation failure anywhere is one rg::Error naming the bytes asked for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"

namespace rg {

struct MemoryLimit {
  uint64_t bytes = 0;
  std::string source;  // "RAM", "RLIMIT_AS", "cgroup memory.max", "cgroup memory.limit_in_bytes"
};

// Every limit that applies to this process, smallest first (RAM is always there).
std::vector<MemoryLimit> memory_limits();
// The limits of the cgroup named by `proc_self_cgroup` (the text of /proc/self/cgroup) under
// the cgroup file systems mounted at `root` (/sys/fs/cgroup), smallest first; the unlimited
// ones ("max", or 2^62 and more) are left out. memory_limits() reads the real ones.
std::vector<MemoryLimit> cgroup_memory_limits(const std::string& proc_self_cgroup,
                                              const std::string& root);

// "RLIMIT_AS 2 GiB (the smallest of RLIMIT_AS 2 GiB, RAM 15.6 GiB)", or "RAM 15.6 GiB" alone.
std::string describe_memory_limit();
std::string bytes_str(uint64_t bytes);  // "2 GiB", "1.5 MiB", "300 bytes"

// The one error of an allocation that failed: "<what>: out of memory allocating N bytes
// (1.5 GiB); the limit in force: RLIMIT_AS 2 GiB (...)".
Error allocation_error(const std::string& what, uint64_t nbytes);

// std::thread(body...), where a thread that cannot start (EAGAIN: its stack could not be
// mapped under the limit, or too many threads) is one rg::Error naming `what` and the limit
// in force, instead of a bare "Resource temporarily unavailable".
Error thread_start_error(const char* what, const std::system_error& e);
template <class... Body>
std::thread start_thread(const char* what, Body&&... body) {
  try {
    return std::thread(std::forward<Body>(body)...);
  } catch (const std::system_error& e) {
    throw thread_start_error(what, e);
  }
}

}  // namespace rg
