// The once-per-kernel opt-in of launch_limits.h, shared by the sim and cuda launches.
#include "kernels/cuda/launch_limits.h"

#include <mutex>
#include <set>
#include <utility>

namespace rg {

void opt_in_once(const void* kernel, int device, void (*raise)(const void* kernel, int device)) {
  static std::mutex mutex;
  static std::set<std::pair<const void*, int>> raised;
  std::lock_guard lock(mutex);
  if (raised.count({kernel, device})) return;
  raise(kernel, device);  // may throw: then it is not marked, and the next launch tries again
  raised.insert({kernel, device});
}

}  // namespace rg
