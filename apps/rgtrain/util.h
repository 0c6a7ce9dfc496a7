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

}  // namespace rgtrain
