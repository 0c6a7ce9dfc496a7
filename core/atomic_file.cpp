// AtomicFile and its signal-safe temp-file cleanup; see atomic_file.h.
#include "core/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace rg {
namespace {

// Temp paths being written, readable from a signal handler: a slot is claimed (free ->
// filling), its path copied, then published (filling -> ready); the handler only reads
// ready slots. Paths longer than the slot are not registered (removed only on restart).
constexpr int kSlots = 32;
constexpr size_t kSlotBytes = 4096;
enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2 };
std::atomic<int> g_slot_state[kSlots];
char g_slot_path[kSlots][kSlotBytes];

int register_temp(const std::string& path) {
  if (path.size() >= kSlotBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slot_state[i].compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slot_path[i], path.c_str(), path.size() + 1);
    g_slot_state[i].store(kReady);
    return i;
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot >= 0) g_slot_state[slot].store(kFree);
}

extern "C" void remove_temps_and_reraise(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_slot_state[i].load() == kReady) ::unlink(g_slot_path[i]);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

struct SplitPath {
  std::string dir;   // with its trailing '/', or empty for the working directory
  std::string name;  // the last component
};

SplitPath split(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

std::string temp_prefix(const std::string& name) { return "." + name + ".tmp."; }

// Where a write to `path` lands: its symbolic links followed, dangling ones too, as
// open(O_CREAT) would follow them. The temp file then sits beside the link's target, and the
// rename replaces the target, not the link.
std::string follow_symlinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {  // Linux's own limit (ELOOP)
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    char target[4096];
    const ssize_t n = ::readlink(p.c_str(), target, sizeof target);
    RG_CHECK(n > 0 && n < ssize_t(sizeof target), "save '", path, "': cannot read the link '", p,
             "': ", n < 0 ? std::strerror(errno) : "too long");
    const std::string to(target, size_t(n));
    p = to[0] == '/' ? to : split(p).dir + to;
  }
  RG_FAIL("save '", path, "': more than 40 levels of symbolic links");
}

// The pid in a temp file's name ".<name>.tmp.<pid>.<n>" (after the prefix), or 0.
pid_t writer_pid(const std::string& rest) {
  char* end = nullptr;
  const long pid = std::strtol(rest.c_str(), &end, 10);
  return end != rest.c_str() && *end == '.' && pid > 0 ? pid_t(pid) : 0;
}

// Whether the process `pid` (of this machine) may still be writing.
bool alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

void fsync_directory(const std::string& dir, const std::string& path) {
  const std::string d = dir.empty() ? "." : dir;
  const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  RG_CHECK(fd >= 0, "save '", path, "': cannot open directory '", d,
           "' to fsync it: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  RG_CHECK(rc == 0, "save '", path, "': fsync of directory '", d, "' failed: ", std::strerror(err));
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  RG_CHECK(!split(path_).name.empty(), "save: '", path_, "' names a directory, not a file");
  const std::string target = follow_symlinks(path_);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    open_directly(target, st);
    return;
  }
  target_ = target;
  const SplitPath p = split(target_);
  temp_path_ = p.dir + temp_prefix(p.name) + std::to_string(::getpid()) + "." +
               std::to_string(counter.fetch_add(1));
  slot_ = register_temp(temp_path_);  // before the file exists: a signal never misses it
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    unregister_temp(slot_);
    RG_FAIL("save: cannot create '", temp_path_, "' (to write '", path_,
            "'): ", std::strerror(err));
  }
}

// A device or FIFO: written in place (renaming over it would replace the node with a file).
void AtomicFile::open_directly(const std::string& target, const struct stat& st) {
  RG_CHECK(!S_ISDIR(st.st_mode), "save: '", path_, "' is a directory, not a file");
  fd_ = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  RG_CHECK(fd_ >= 0, "save: cannot open '", path_,
           "' (not a regular file) for writing: ", std::strerror(errno));
  target_ = target;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {  // not committed: discard the partial file
    ::close(fd_);
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  }
  unregister_temp(slot_);
}

void AtomicFile::write(const void* data, size_t nbytes) {
  RG_CHECK(fd_ >= 0, "save: write to '", path_, "' after commit");
  const char* p = static_cast<const char*>(data);
  while (nbytes > 0) {
    const ssize_t n = ::write(fd_, p, std::min<size_t>(nbytes, 1 << 30));
    if (n < 0 && errno == EINTR) continue;
    RG_CHECK(n > 0, "save: error writing '", temp_path_.empty() ? target_ : temp_path_,
             "' (to write '", path_, "'): ", n < 0 ? std::strerror(errno) : "no progress");
    p += n;
    nbytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  RG_CHECK(fd_ >= 0, "save: '", path_, "' committed twice");
  if (temp_path_.empty()) {  // written in place (open_directly)
    const int fd = fd_;
    fd_ = -1;
    RG_CHECK(::close(fd) == 0, "save: closing '", path_, "' failed: ", std::strerror(errno));
    return;
  }
  RG_CHECK(::fsync(fd_) == 0, "save: fsync of '", temp_path_, "' failed: ", std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 || ::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    unregister_temp(slot_);
    slot_ = -1;
    RG_FAIL("save: cannot move '", temp_path_, "' to '", path_, "': ", std::strerror(err));
  }
  unregister_temp(slot_);
  slot_ = -1;
  fsync_directory(split(target_).dir, path_);
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  AtomicFile file(path);
  file.write(contents.data(), contents.size());
  file.commit();
}

void remove_temp_files_on_signal() {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction sa {};
    sa.sa_handler = remove_temps_and_reraise;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;  // a second signal ends the process at once
    ::sigaction(sig, &sa, nullptr);
  }
}

std::vector<std::string> remove_stale_temp_files(const std::string& path) {
  const SplitPath p = split(path);
  const std::string prefix = temp_prefix(p.name);
  std::vector<std::string> removed;
  DIR* dir = ::opendir(p.dir.empty() ? "." : p.dir.c_str());
  if (!dir) return removed;  // no directory yet: nothing left behind
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (alive(writer_pid(name.substr(prefix.size())))) continue;  // still being written
    const std::string stale = p.dir + name;
    if (::unlink(stale.c_str()) == 0) removed.push_back(stale);
  }
  ::closedir(dir);
  return removed;
}

}  // namespace rg
