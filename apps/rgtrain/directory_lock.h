// One job per checkpoint directory: rank 0 holds an flock on "<dir>/.rgtrain.lock" from
// start-up to exit, with its pid and host written inside. A second job given the same
// --checkpoint is refused at start, naming the holder, before it removes or writes anything
// there. The kernel drops the lock when the holder exits, however it ends (SIGKILL too), so
// a stale lock file never blocks a restart.
#pragma once
#include <string>

namespace rgtrain {

class DirectoryLock {
 public:
  // Creates `dir` if needed and locks it; throws UsageError naming the holder if another
  // process holds it.
  explicit DirectoryLock(const std::string& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace rgtrain
