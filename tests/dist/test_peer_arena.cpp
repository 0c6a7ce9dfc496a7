// Mapping a peer's shareable arena (dist/peer_arena.cpp) from what the peer described: the
// right file maps to its bytes, and every description that does not fit (another inode, a
// range outside the file, a closed descriptor, no such process) gives nullptr, so the
// caller reads another way instead of touching memory it does not have. The "peer" is this
// process with a memory file of its own (the arena itself is tested in tests/core).
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "dist/peer_arena.h"

using namespace rg::dist;

TEST_CASE("map_peer_arena maps the described file and refuses every description that misfits") {
  const size_t size = 1 << 20;
  const int fd = memfd_create("test-peer-arena", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, size) == 0);
  const char text[] = "bytes of the peer";
  REQUIRE(pwrite(fd, text, sizeof text, 4096) == static_cast<ssize_t>(sizeof text));
  struct stat st {};
  REQUIRE(fstat(fd, &st) == 0);
  const uint64_t inode = st.st_ino;
  const int64_t pid = getpid();

  char* at = map_peer_arena(pid, fd, inode, 4096, sizeof text);
  REQUIRE(at != nullptr);
  CHECK(std::memcmp(at, text, sizeof text) == 0);
  at[0] = 'B';  // mapped for writing: the peer sees it
  char back = 0;
  REQUIRE(pread(fd, &back, 1, 4096) == 1);
  CHECK(back == 'B');
  CHECK(map_peer_arena(pid, fd, inode, size - 8, 8) != nullptr);  // the last bytes

  CHECK(map_peer_arena(pid, fd, inode + 1, 4096, 8) == nullptr);  // another file
  CHECK(map_peer_arena(pid, fd, inode, size - 8, 9) == nullptr);  // past its end
  CHECK(map_peer_arena(pid, fd, inode, int64_t(size) + 1, 0) == nullptr);
  CHECK(map_peer_arena(pid, fd, inode, -1, 8) == nullptr);
  CHECK(map_peer_arena(pid, 1 << 20, inode, 0, 8) == nullptr);  // no such descriptor
  CHECK(map_peer_arena(0, fd, inode, 0, 8) == nullptr);         // no such process
  CHECK(map_peer_arena(pid, -1, inode, 0, 8) == nullptr);
  close(fd);  // the mapping stays: later collectives find it again
  char* again = map_peer_arena(pid, fd, inode, 4096, sizeof text);
  CHECK(again == at);
}
