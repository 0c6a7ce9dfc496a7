// Reads a whole file into memory, with one clear rg::Error (naming `who`, the path and the
// reason) when it is missing, unreadable, not a regular file (a directory, /dev/zero, a
// pipe: their size is unknown or endless) or larger than `max_bytes`. The size is checked
// before a byte is read, and exactly that many bytes are read. Shared by the datasets and
// safetensors.
#pragma once
#include <cstdint>
#include <string>

namespace rg::data {

// The default limit of read_file: RG_MAX_FILE_BYTES (bytes) when set, else 64 GiB.
uint64_t default_max_file_bytes();

std::string read_file(const std::string& path, const char* who,
                      uint64_t max_bytes = default_max_file_bytes());

// The size of a regular file, with the same checks (and errors) as read_file.
uint64_t checked_file_size(const std::string& path, const char* who,
                           uint64_t max_bytes = default_max_file_bytes());

}  // namespace rg::data
