// Whole-file reads with clear errors and bounded size; see read_file.h.
#include "data/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"

namespace rg::data {
namespace {

std::string describe_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Checks an open descriptor: a regular file of at most max_bytes; returns its size.
uint64_t checked_size(int fd, const std::string& path, const char* who, uint64_t max_bytes) {
  struct stat st {};
  RG_CHECK(::fstat(fd, &st) == 0, who, ": cannot stat '", path, "': ", std::strerror(errno));
  RG_CHECK(S_ISREG(st.st_mode), who, ": '", path, "' is ", describe_kind(st.st_mode),
           ", not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  RG_CHECK(size <= max_bytes, who, ": '", path, "' has ", size, " bytes, more than the limit of ",
           max_bytes, " (RG_MAX_FILE_BYTES)");
  return size;
}

int open_or_fail(const std::string& path, const char* who) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a fifo must not block
  RG_CHECK(fd >= 0, who, ": cannot open '", path, "': ", std::strerror(errno));
  return fd;
}

}  // namespace

uint64_t default_max_file_bytes() {
  const char* s = std::getenv("RG_MAX_FILE_BYTES");
  if (!s || !*s) return uint64_t(64) << 30;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  RG_CHECK(end != s && *end == '\0' && errno == 0 && v > 0 && s[0] != '-', "RG_MAX_FILE_BYTES='", s,
           "' is not a positive integer (bytes)");
  return v;
}

uint64_t checked_file_size(const std::string& path, const char* who, uint64_t max_bytes) {
  const int fd = open_or_fail(path, who);
  try {
    const uint64_t size = checked_size(fd, path, who, max_bytes);
    ::close(fd);
    return size;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::string read_file(const std::string& path, const char* who, uint64_t max_bytes) {
  const int fd = open_or_fail(path, who);
  std::string bytes;
  try {
    const uint64_t size = checked_size(fd, path, who, max_bytes);
    try {
      bytes.resize(size);
    } catch (const std::bad_alloc&) {
      RG_FAIL(who, ": '", path, "' has ", size, " bytes, more than this process can allocate");
    }
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      RG_CHECK(n >= 0, who, ": error reading '", path, "': ", std::strerror(errno));
      RG_CHECK(n > 0, who, ": '", path, "' shrank while being read (", done, " of ", bytes.size(),
               " bytes)");
      done += static_cast<size_t>(n);
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

}  // namespace rg::data
