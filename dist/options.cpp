// The process group's defaults from the environment, each value checked.
#include "dist/options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "dist/store_wire.h"

namespace rg::dist {

// RG_DIST_TIMEOUT: finite seconds above 0 and at most the store's longest wait (30 days), so
// that "inf" or "1e100" cannot overflow a deadline into one already passed.
Milliseconds default_timeout() {
  if (const char* s = std::getenv("RG_DIST_TIMEOUT"); s && *s) {
    constexpr double kMaxSeconds = double(store_wire::kMaxWait.count()) / 1000;
    char* end = nullptr;
    const double seconds = std::strtod(s, &end);
    RG_CHECK(
        end != s && *end == '\0' && std::isfinite(seconds) && seconds > 0 && seconds <= kMaxSeconds,
        "RG_DIST_TIMEOUT='", s, "': expected a finite number of seconds above 0 and at most ",
        int64_t(kMaxSeconds), " (30 days)");
    return Milliseconds(std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000)));
  }
  return Milliseconds(300'000);
}

namespace {
// A whole number of bytes from 0 to 1 GiB in environment variable `name`, else `fallback`.
size_t bytes_from_env(const char* name, size_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const long long bytes = std::strtoll(s, &end, 10);
  RG_CHECK(end != s && *end == '\0' && bytes >= 0 && bytes <= (int64_t(1) << 30), name,
           ": expected a whole number of bytes from 0 to 1 GiB, got '", s, "'");
  return static_cast<size_t>(bytes);
}
}  // namespace

size_t default_direct_bytes() { return bytes_from_env("RG_DIST_DIRECT_BYTES", 32 << 10); }
size_t default_direct_bytes_across_hosts() {
  return bytes_from_env("RG_DIST_DIRECT_BYTES_ACROSS_HOSTS", 2 << 10);
}
size_t default_recursive_doubling_bytes() {
  return bytes_from_env("RG_DIST_RECURSIVE_DOUBLING_BYTES", 8 << 10);
}
size_t default_single_copy_bytes() { return bytes_from_env("RG_DIST_SINGLE_COPY_BYTES", 32 << 10); }
size_t default_single_copy_read_bytes() {
  return bytes_from_env("RG_DIST_SINGLE_COPY_READ_BYTES", 2 << 20);
}

AllreduceAlgorithm default_allreduce_algorithm() {
  const char* s = std::getenv("RG_DIST_ALLREDUCE");
  if (!s || !*s || std::string(s) == "auto") return AllreduceAlgorithm::automatic;
  if (std::string(s) == "ring") return AllreduceAlgorithm::ring;
  if (std::string(s) == "two_level") return AllreduceAlgorithm::two_level;
  if (std::string(s) == "recursive_doubling") return AllreduceAlgorithm::recursive_doubling;
  RG_FAIL("RG_DIST_ALLREDUCE='", s, "': expected auto, ring, two_level or recursive_doubling");
}

}  // namespace rg::dist
