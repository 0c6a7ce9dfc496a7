// The shareable arena (core/shareable_host_memory.h) behind the cpu allocator: which blocks
// come from it (large ones, under a ShareableAllocations scope only), that its memory is the file a
// peer would map, that cached blocks come back (also after empty_cache gave their pages away), and
// that a forked child gets a private copy. Its own executable: turning the arena on changes the
// allocator for the process.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "core/shareable_host_memory.h"
#include "ringgrad.h"

using namespace rg;

namespace {

constexpr int64_t kLarge = (2 << 20) / 4;  // floats of a 2 MiB block

// A tensor of `numel` floats, allocated as a collective's buffer (shared) or not.
Tensor filled(int64_t numel, float value, bool shared = true) {
  std::optional<ShareableAllocations> scope;
  if (shared) scope.emplace();
  Tensor t = empty({numel});
  scope.reset();
  float* p = t.data<float>();
  for (int64_t i = 0; i < numel; ++i) p[i] = value + static_cast<float>(i % 1000);
  return t;
}

bool holds(const Tensor& t, float value) {
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] != value + static_cast<float>(i % 1000)) return false;
  return true;
}

ShareableLocation location_of(const Tensor& t) {
  return shareable_location(t.data_ptr(), t.nbytes());
}

}  // namespace

TEST_CASE("shareable arena: large blocks only once asked, the memory a peer maps, cached") {
  CHECK(location_of(filled(kLarge, 1)).offset == -1);  // before: ordinary memory
  REQUIRE(share_large_host_blocks(1 << 20));
  Tensor large = filled(kLarge, 2);
  const ShareableLocation at = location_of(large);
  REQUIRE(at.offset >= 0);
  CHECK(location_of(filled(1000, 3)).offset == -1);  // small blocks stay ordinary
  // Large blocks outside a ShareableAllocations scope (weights, activations) stay private.
  CHECK(location_of(filled(kLarge, 6, /*shared=*/false)).offset == -1);
  {
    ShareableAllocations outer;
    ShareableAllocations inner;  // nested scopes
    CHECK(location_of(filled(kLarge, 7, false)).offset >= 0);
  }
  CHECK(location_of(filled(kLarge, 8, false)).offset == -1);
  struct stat st {};
  REQUIRE(fstat(at.fd, &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_ino) == at.inode);

  // Mapped again through /proc, as a peer does: the same memory, both ways.
  const std::string path = "/proc/self/fd/" + std::to_string(at.fd);
  const int file = open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(file >= 0);
  void* map =
      mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
  close(file);
  REQUIRE(map != MAP_FAILED);
  auto* seen = reinterpret_cast<float*>(static_cast<char*>(map) + at.offset);
  CHECK(seen[999] == large.data<float>()[999]);
  seen[5] = -7.0f;
  CHECK(large.data<float>()[5] == -7.0f);
  munmap(map, static_cast<size_t>(st.st_size));

  // A freed block is handed out again, also after empty_cache returned its pages.
  void* block = large.data_ptr();
  large = Tensor();
  Tensor again = filled(kLarge, 4);
  CHECK(again.data_ptr() == block);
  again = Tensor();
  empty_cache(kCPU);
  Tensor after = filled(kLarge, 5);
  CHECK(after.data_ptr() == block);
  CHECK(holds(after, 5));
}

TEST_CASE("shareable arena: a forked child gets a private copy, and an arena of its own") {
  REQUIRE(share_large_host_blocks(1 << 20));
  Tensor t = filled(kLarge, 10);
  const ShareableLocation parent = location_of(t);
  REQUIRE(parent.offset >= 0);
  const pid_t child = fork();
  if (child == 0) {
    int code = 0;
    if (!holds(t, 10)) code |= 1;                                 // the contents came along
    if (location_of(t).offset != -1) code |= 2;                   // but are no longer shared
    t.fill_(0.5);                                                 // writes stay in the child
    if (location_of(filled(kLarge, 11)).offset != -1) code |= 4;  // until it asks
    if (!share_large_host_blocks(1 << 20)) code |= 8;
    const ShareableLocation own = location_of(filled(kLarge, 12));
    if (own.offset < 0 || own.inode == parent.inode) code |= 16;
    t = Tensor();  // the copy's block goes back to the allocator without a crash
    _exit(code);
  }
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(holds(t, 10));  // the child's writes did not reach the parent
  CHECK(location_of(t).offset == parent.offset);
}
