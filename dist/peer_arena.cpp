// Peer arenas, mapped once and kept: a job has a handful of peers, each mapping is address
// space (pages appear as they are touched), and a process that went away and came back
// under the same pid has another inode, so a stale mapping is never used. A failed attempt
// is remembered too, so a peer that cannot be mapped costs one open, not one per collective.
// A mapping keeps its file's memory alive, so mapping a new peer first drops the mappings of
// processes that have exited (a restarted job's old ranks).
#include "dist/peer_arena.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace rg::dist {
namespace {

struct Mapping {
  char* base = nullptr;  // nullptr: could not be mapped
  size_t size = 0;
};

Mapping map_arena(int64_t pid, int64_t fd, uint64_t inode) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int file = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (file < 0) return {};
  struct stat st {};
  Mapping m;
  if (fstat(file, &st) == 0 && st.st_ino == inode && st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_NORESERVE, file, 0);
    if (p != MAP_FAILED) m = {static_cast<char*>(p), static_cast<size_t>(st.st_size)};
  }
  close(file);  // the mapping keeps the file
  return m;
}

using Mappings = std::map<std::tuple<int64_t, int64_t, uint64_t>, Mapping>;  // pid, fd, inode

void forget_exited_peers(Mappings& mappings) {
  for (auto it = mappings.begin(); it != mappings.end();) {
    const bool exited = kill(static_cast<pid_t>(std::get<0>(it->first)), 0) != 0 && errno == ESRCH;
    if (!exited) {
      ++it;
      continue;
    }
    if (it->second.base != nullptr) munmap(it->second.base, it->second.size);
    it = mappings.erase(it);
  }
}

}  // namespace

char* map_peer_arena(int64_t pid, int64_t fd, uint64_t inode, int64_t offset, size_t bytes) {
  static std::mutex mutex;
  static auto* mappings = new Mappings();  // never destroyed: see the top
  if (pid <= 0 || fd < 0 || offset < 0) return nullptr;
  Mapping m;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = mappings->find({pid, fd, inode});
    if (it == mappings->end()) {
      forget_exited_peers(*mappings);
      it = mappings->emplace(std::tuple{pid, fd, inode}, map_arena(pid, fd, inode)).first;
    }
    m = it->second;
  }
  const auto at = static_cast<size_t>(offset);
  if (m.base == nullptr || at > m.size || bytes > m.size - at) return nullptr;
  return m.base + at;
}

}  // namespace rg::dist
