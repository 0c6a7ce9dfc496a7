// The checkpoint directory's lock; see directory_lock.h.
#include "apps/rgtrain/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "apps/rgtrain/util.h"

namespace rgtrain {
namespace {

// "pid 1234 on host-a", as the holder wrote it (it writes just after locking: may be empty).
std::string holder_of(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, size_t(n)) : "";
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder.empty() ? "a process that is starting" : holder;
}

}  // namespace

DirectoryLock::DirectoryLock(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("--checkpoint: cannot create the directory '", dir, "': ", ec.message());
  const std::string path = dir + "/.rgtrain.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) fail("--checkpoint: cannot open '", path, "': ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? holder_of(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) fail("--checkpoint: cannot lock '", path, "': ", std::strerror(err));
    fail("--checkpoint '", dir, "' belongs to another running job (", holder, " holds ", path,
         "); give each job its own checkpoint directory");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
    fail("--checkpoint: cannot write '", path, "': ", std::strerror(errno));
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
}

}  // namespace rgtrain
