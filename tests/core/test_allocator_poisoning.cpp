// The cpu caching allocator and AddressSanitizer (core/cpu_allocator.h): a read one element
// past a tensor's end, or from a freed block, is reported although the block is rounded up
// and cached; RG_CPU_ALLOCATOR_CACHING=0 gives every freed block back to the system.
// The reads run in a child: this executable again, started for one "child:" case (skipped
// in a normal run) with the variable set as the case needs, its stderr read back. Without
// AddressSanitizer nothing can report those reads; the cases check what the allocator
// itself promises instead.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_allocator.h"
#include "core/device_interface.h"
#include "core/error.h"
#include "core/shareable_host_memory.h"
#include "core/tensor.h"

extern char** environ;

namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RG_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RG_TEST_ASAN 1
#endif
#ifdef RG_TEST_ASAN
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

struct ChildResult {
  int status = 0;
  std::string err;  // what it wrote to stdout and stderr
  bool exited_0() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
  // Exited 0 having run exactly one case, which passed: a case name that matches nothing
  // (renamed, say) runs no case and exits 0 too, which must not read as a pass.
  bool ok() const { return exited_0() && ran_one_passing_case(); }
  bool reported(const char* what) const {
    return !exited_0() && err.find(what) != std::string::npos;
  }
  bool ran_one_passing_case() const {
    std::string compact;  // doctest pads its summary's numbers with spaces
    for (char c : err)
      if (c != ' ') compact += c;
    return compact.find("testcases:1|1passed|0failed") != std::string::npos;
  }
};

// Runs the case "child: <name>" in a new process of this executable, with
// RG_CPU_ALLOCATOR_CACHING=<caching> (unset when null).
ChildResult run_child(const std::string& name, const char* caching) {
  const std::string var = "RG_CPU_ALLOCATOR_CACHING=";
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, var.c_str(), var.size()) != 0) env.emplace_back(*e);
  if (caching) env.push_back(var + caching);
  std::vector<std::string> args = {"test_allocators", "--test-case=child: " + name,
                                   "--no-skip=true"};
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  int fds[2];
  REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  ChildResult result;
  char buf[4096];
  for (ssize_t n; rc == 0 && (n = read(fds[0], buf, sizeof(buf))) != 0;)
    if (n > 0) result.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  REQUIRE(rc == 0);
  waitpid(pid, &result.status, 0);
  return result;
}

size_t block_of(size_t nbytes) {
  return rg::device_interface(rg::DeviceType::cpu).block_bytes(nbytes);
}

// The error of the variable set to `value`.
std::string caching_error(const std::string& value) {
  return "RG_CPU_ALLOCATOR_CACHING: expected 0 (free every block to the system) or 1 (cache "
         "freed blocks), got '" +
         value + "'";
}

float read_float(const float* p) { return *static_cast<const volatile float*>(p); }

}  // namespace

TEST_CASE("child: reads one element past a tensor's end" * doctest::skip()) {
  rg::Tensor t = rg::empty({10});  // 40 bytes in a block of 64
  MESSAGE("read past the end: " << read_float(t.data<float>() + 10));
}

TEST_CASE("child: reads a freed block" * doctest::skip()) {
  const float* p = nullptr;
  {
    rg::Tensor t = rg::empty({10});
    p = t.data<float>();
  }
  MESSAGE("read after free: " << read_float(p));
}

TEST_CASE("child: reads past the end of a shareable arena block" * doctest::skip()) {
  REQUIRE(rg::share_large_host_blocks(size_t(1) << 20));
  rg::ShareableAllocations shared;
  rg::Tensor t = rg::empty({(int64_t(1) << 18) + 1});  // 1 MiB + 4 bytes
  REQUIRE(rg::shareable_location(t.data_ptr(), 4).offset >= 0);
  MESSAGE("read past the end: " << read_float(t.data<float>() + t.numel()));
}

TEST_CASE("child: forks with arena blocks in use and cached" * doctest::skip()) {
  REQUIRE(rg::share_large_host_blocks(size_t(1) << 20));
  rg::ShareableAllocations shared;
  rg::Tensor kept = rg::empty({(int64_t(1) << 18) + 1});  // its tail is poisoned
  float* p = kept.data<float>();
  for (int64_t i = 0; i < kept.numel(); ++i) p[i] = static_cast<float>(i);
  { rg::Tensor cached = rg::empty({int64_t(1) << 18}); }  // poisoned whole
  const pid_t pid = fork();  // the child copies the arena's blocks in use
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int64_t i = 0; i < kept.numel(); ++i)
      if (p[i] != static_cast<float>(i)) _exit(1);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("child: frees to the system exactly when caching is off" * doctest::skip()) {
  const bool caching = rg::cpu_allocator_caching(std::getenv("RG_CPU_ALLOCATOR_CACHING"));
  rg::Tensor warm = rg::empty({1});  // the allocator's first allocation reads the variable
  const rg::AllocatorStats before = rg::memory_stats(rg::kCPU);
  std::vector<rg::Tensor> held;
  for (int i = 0; i < 3; ++i) held.push_back(rg::empty({1000}));
  held.clear();  // three blocks of one class, freed together
  const rg::AllocatorStats after = rg::memory_stats(rg::kCPU);
  for (int i = 0; i < 3; ++i) held.push_back(rg::empty({1000}));
  const rg::AllocatorStats again = rg::memory_stats(rg::kCPU);
  if (caching) {  // cached in one list
    CHECK(after.reserved - after.allocated >= 3 * block_of(4000));
    CHECK(again.system_allocs == after.system_allocs);  // and handed out again
  } else {
    CHECK(after.reserved == after.allocated);  // nothing cached
    CHECK(again.system_allocs - before.system_allocs == 6);
  }
  held.clear();  // cached again until the exit (where LeakSanitizer runs)
}

TEST_CASE("child: an invalid RG_CPU_ALLOCATOR_CACHING fails the first allocation" *
          doctest::skip()) {
  for (int i = 0; i < 2; ++i)  // every allocation, until the variable is right
    CHECK_THROWS_WITH_AS(rg::empty({4}), caching_error("yes").c_str(), rg::Error);
}

TEST_CASE("a read one element past a cpu tensor's end is reported under AddressSanitizer") {
  for (const char* caching : {"1", "0"}) {
    INFO("RG_CPU_ALLOCATOR_CACHING=" << caching);
    if (kAsan) {
      ChildResult child = run_child("reads one element past a tensor's end", caching);
      INFO(child.err);
      CHECK((child.reported("use-after-poison") || child.reported("heap-buffer-overflow")));
    } else {  // the read stays inside the block; with caching off, freeing gives it back
      CHECK(block_of(40) == 64);
      CHECK(run_child("frees to the system exactly when caching is off", caching).ok());
    }
  }
  if (kAsan) {  // blocks of the shareable arena too (mapped from a memory file, not malloc's)
    ChildResult child = run_child("reads past the end of a shareable arena block", nullptr);
    INFO(child.err);
    CHECK(child.reported("use-after-poison"));
  }
}

TEST_CASE("a read from a freed cpu block is reported under AddressSanitizer, cached or not") {
  if (kAsan) {
    ChildResult cached = run_child("reads a freed block", "1");
    INFO(cached.err);
    CHECK(cached.reported("use-after-poison"));
    ChildResult freed = run_child("reads a freed block", "0");
    INFO(freed.err);
    CHECK(freed.reported("heap-use-after-free"));
  } else {  // a freed block is handed out again as it is: only poisoning could show a read
    REQUIRE(rg::cpu_allocator_caching(std::getenv("RG_CPU_ALLOCATOR_CACHING")));
    const void* first = nullptr;
    {
      rg::Tensor t = rg::empty({10});
      first = t.data_ptr();
    }
    rg::Tensor again = rg::empty({10});
    CHECK(again.data_ptr() == first);
  }
}

TEST_CASE("a forked child copies its poisoned arena blocks without a report, keeping them") {
  ChildResult child = run_child("forks with arena blocks in use and cached", nullptr);
  INFO(child.err);
  CHECK(child.ok());
}

TEST_CASE("RG_CPU_ALLOCATOR_CACHING=0 gives every freed cpu block back to the system") {
  for (const char* caching : {"0", "1", ""}) {
    ChildResult child = run_child("frees to the system exactly when caching is off", caching);
    INFO("RG_CPU_ALLOCATOR_CACHING=" << caching << "\n" << child.err);
    CHECK(child.ok());
  }
}

TEST_CASE("RG_CPU_ALLOCATOR_CACHING is 0 or 1; another value is an rg::Error naming it") {
  CHECK(rg::cpu_allocator_caching(nullptr));
  CHECK(rg::cpu_allocator_caching(""));
  CHECK(rg::cpu_allocator_caching("1"));
  CHECK_FALSE(rg::cpu_allocator_caching("0"));
  for (const char* bad : {"yes", "false", "00", " 0", "2"})
    CHECK_THROWS_WITH_AS(rg::cpu_allocator_caching(bad), caching_error(bad).c_str(), rg::Error);
  ChildResult child =
      run_child("an invalid RG_CPU_ALLOCATOR_CACHING fails the first allocation", "yes");
  INFO(child.err);
  CHECK(child.ok());
}
