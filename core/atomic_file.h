// Writes a file so that a crash never leaves it half-written: the bytes go to a temporary
// file in the same directory, which is flushed, fsync'ed and renamed over the target; the
// directory is fsync'ed too. A failure at any point leaves the previous file untouched.
#pragma once
#include <string>

namespace rg {

void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace rg
