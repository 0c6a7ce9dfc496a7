// The caching allocators under memory pressure: freeing never allocates (it runs in
// Storage's noexcept destructor, also while an out-of-memory error unwinds), and running
// out of memory is one rg::Error naming the size, after which the process carries on.
// Its own executable: it replaces the global operator new to count allocations.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "ringgrad.h"

namespace {
std::atomic<long> g_operator_new_calls{0};
}  // namespace

void* operator new(size_t n) {
  g_operator_new_calls.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's temporary buffer uses it), so that every form the
// replaced deletes free comes from malloc: AddressSanitizer's own would be a mismatch.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  g_operator_new_calls.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

// Under AddressSanitizer a failed allocation must come back as null, as from glibc, not
// abort the process: this test is about what the library does then.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace {

// Bytes of address space the process uses now (VmSize).
size_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmSize:") {
      size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

// Runs `body` in a child process; returns its wait status.
template <typename Body>
int in_child(Body body) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// Allocates cpu tensors of `bytes` bytes (as i32) into `held` until one fails or `held` is full.
void fill_memory(std::vector<rg::Tensor>& held, int64_t bytes) {
  try {
    while (held.size() < held.capacity()) held.push_back(rg::empty({bytes / 4}, rg::DType::i32));
  } catch (const std::exception&) {  // rg::Error, or bad_alloc when even its message fails
  }
}

}  // namespace

TEST_CASE("freeing cpu tensors allocates nothing, even for a size never freed before") {
  std::vector<rg::Tensor> tensors;
  tensors.reserve(64);
  for (int i = 0; i < 64; ++i)  // sizes from 4 KiB to ~400 KiB, most in classes of their own
    tensors.push_back(rg::empty({int64_t(1000 + 37 * i) << (i / 8)}, rg::DType::i32));
  long before = g_operator_new_calls.load();
  tensors.clear();
  CHECK(g_operator_new_calls.load() == before);
  rg::empty_cache(rg::kCPU);
}

TEST_CASE("freeing sim tensors allocates nothing, even for a size never freed before") {
  rg::Device sim = rg::Device::parse("sim");
  std::vector<rg::Tensor> tensors;
  tensors.reserve(64);
  for (int i = 0; i < 64; ++i)  // several blocks per size class, classes never used before
    tensors.push_back(rg::empty({int64_t(300000 + 4096 * (i / 4))}, rg::DType::i32, sim));
  long before = g_operator_new_calls.load();
  tensors.clear();
  CHECK(g_operator_new_calls.load() == before);
  rg::empty_cache(sim);
}

TEST_CASE("an impossible cpu allocation is an rg::Error naming the size") {
  int64_t n = int64_t(1) << 44;  // 64 TiB of i32
  CHECK_THROWS_WITH_AS(rg::empty({n}, rg::DType::i32),
                       doctest::Contains("cpu allocator: out of memory allocating 70368744177664 "
                                         "bytes (64 TiB); the limit in force: "),
                       rg::Error);
  rg::Tensor t = rg::ones({16});  // and the allocator still works
  CHECK(t.sum().item() == 16);
}

TEST_CASE("running out of address space unwinds cleanly and memory is usable again") {
  int status = in_child([] {
    // Allow 512 MiB more address space than is in use now.
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    limit.rlim_cur = address_space_bytes() + (size_t(512) << 20);
    if (setrlimit(RLIMIT_AS, &limit) != 0) return 10;
    std::vector<rg::Tensor> held;
    held.reserve(1 << 16);
    // 8 MiB blocks until the first failure, which must be the allocator's rg::Error.
    int64_t big = int64_t(8) << 20;
    std::string error;
    try {
      while (held.size() < 1024) held.push_back(rg::empty({big / 4}, rg::DType::i32));
    } catch (const rg::Error& e) {
      error = e.what();
    }
    if (error.find("cpu allocator: out of memory allocating 8388608 bytes") != 0) return 11;
    // The message names the limit: first where it is the smallest; under AddressSanitizer,
    // whose shadow memory makes the address space (and so this limit) larger than RAM, among
    // "the smallest of ...".
    if (error.find("the limit in force: ") == std::string::npos ||
        error.find("RLIMIT_AS") == std::string::npos)
      return 13;
    size_t big_count = held.size();
    // Then ever smaller blocks, so that hardly any free memory remains for the free path.
    for (int64_t bytes = int64_t(2) << 20; bytes >= 64; bytes /= 4) fill_memory(held, bytes);
    held.clear();  // every block goes back to the cache, which must not need memory
    try {          // the cached blocks serve the same sizes again
      for (size_t i = 0; i < big_count; ++i) held.push_back(rg::empty({big / 4}, rg::DType::i32));
    } catch (const std::exception&) {
      return 12;
    }
    held.clear();
    rg::empty_cache(rg::kCPU);  // and giving them back to the system works too
    return 0;
  });
  INFO("child wait status " << status);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
