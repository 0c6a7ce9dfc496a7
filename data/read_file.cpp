// Whole-file reads with clear errors; see read_file.h.
#include "data/read_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace rg::data {

std::string read_file(const std::string& path, const char* who) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  RG_CHECK(f != nullptr, who, ": cannot open '", path, "': ", std::strerror(errno));
  std::string bytes;
  char chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), f)) > 0) bytes.append(chunk, got);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  RG_CHECK(!failed, who, ": error reading '", path, "': ", std::strerror(err));
  return bytes;
}

}  // namespace rg::data
