// Atomic file writes: `path` holds either its old contents or all of the new ones, never a
// mix. The bytes go to a temporary file "<dir>/.<name>.tmp.<pid>.<n>" beside the target,
// which is fsync'ed and renamed over it; then the directory is fsync'ed so the rename lasts.
//
// What is replaced is what open(O_CREAT) would write to: a symbolic link is followed (the
// temp file goes beside its target, and the target is replaced, not the link). A path that
// exists and is not a regular file (a device such as /dev/null or /dev/full, a FIFO) is
// written in place, without a temp file: renaming over it would replace the node. A
// directory is refused.
//
// Temporary files never outlive their writer when it can help it:
//  - an exception (the writer destroyed without commit()) removes the temp file;
//  - after remove_temp_files_on_signal(), SIGTERM/SIGINT/SIGHUP remove every temp file still
//    being written (their paths sit in fixed, signal-safe slots), then end the process by
//    the same signal;
//  - what SIGKILL or a power loss leaves, remove_stale_temp_files(path) cleans up at the
//    next start: only the files whose writer (the pid in the name) is no longer running.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

struct stat;

namespace rg {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // without commit(): closes and removes the temp file
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t nbytes);
  // fsync, rename over path(), fsync the directory. Throws rg::Error (temp file removed).
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }  // empty when written in place

 private:
  void open_directly(const std::string& target, const struct stat& st);
  std::string path_, target_, temp_path_;  // target_: path_ with its links followed
  int fd_ = -1;
  int slot_ = -1;  // signal-cleanup slot holding temp_path_, or -1
};

void write_file_atomically(const std::string& path, const std::string& contents);

// Installs the SIGTERM/SIGINT/SIGHUP handlers described above (for programs; a library
// never installs signal handlers by itself). Idempotent.
void remove_temp_files_on_signal();

// Removes the temp files an AtomicFile for `path` left behind ("<dir>/.<name>.tmp.*") whose
// writer has ended, and returns their paths. A temp file of a process still running on this
// machine stays (another job may be writing it; rgtrain also locks its checkpoint directory).
std::vector<std::string> remove_stale_temp_files(const std::string& path);

}  // namespace rg
