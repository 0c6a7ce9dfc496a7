// Small helpers shared by rgtrain's files: errors, formatting, clock.
#pragma once
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>

#include "apps/rgtrain/config.h"

namespace rgtrain {

template <typename... A>
[[noreturn]] void fail(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw UsageError(os.str());
}

// printf-style formatting of one number.
std::string fmt(const char* format, double value);
// "m:ss"
std::string hms(double seconds);
double now_seconds();
// 64-bit FNV-1a of bytes (a fingerprint, not a cryptographic hash).
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull);

}  // namespace rgtrain
