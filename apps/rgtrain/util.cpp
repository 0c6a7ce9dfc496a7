#include "apps/rgtrain/util.h"

#include <algorithm>
#include <cstdio>

namespace rgtrain {

std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string hms(double seconds) {
  const int t = int(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace rgtrain
