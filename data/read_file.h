// Reads a whole file into memory, with one clear rg::Error (naming `who`, the path and the
// OS reason) when it is missing or unreadable. Shared by the datasets and safetensors.
#pragma once
#include <string>

namespace rg::data {

std::string read_file(const std::string& path, const char* who);

}  // namespace rg::data
