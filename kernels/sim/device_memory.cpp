// The sim device's cudaMalloc and cudaFree, and its memory: the host's, or the cap that
// RG_SIM_DEVICE_MEMORY sets (bytes per sim device), so that a test can run out of device
// memory on sim as on a GPU -- the caching allocator's retries, its out-of-memory message
// and a graph pool that cannot grow. The variable is read at each raw allocation (they are
// rare: a segment at a time), so a test may set it for a while.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "core/device.h"
#include "core/error.h"
#include "kernels/cuda/capture_rules.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/device.h"
#include "kernels/sim/sticky_error.h"

namespace rg::sim {

namespace {

size_t host_memory() {
  return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// The raw bytes each device holds, and each raw allocation's size (for its release).
struct Reserved {
  std::mutex mutex;
  size_t bytes = 0;
  std::unordered_map<void*, size_t> sizes;
};
Reserved& reserved(int index) {
  static Reserved* devices = new Reserved[kMaxDeviceIndex];  // never destroyed: frees after main
  RG_CHECK(index >= 0 && index < kMaxDeviceIndex, "sim: device index ", index, " out of range");
  return devices[index];
}

}  // namespace

size_t device_memory_cap() {
  const char* value = std::getenv("RG_SIM_DEVICE_MEMORY");
  if (!value || !*value) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long bytes = std::strtoull(value, &end, 10);
  RG_CHECK(*value >= '0' && *value <= '9' && *end == 0 && errno == 0 && bytes > 0,
           "RG_SIM_DEVICE_MEMORY=", value,
           ": expected the memory of each sim device in bytes, a whole number > 0 (e.g. "
           "1073741824 for 1 GiB)");
  return static_cast<size_t>(bytes);
}

size_t total_memory(int) {
  const size_t cap = device_memory_cap();
  return cap ? cap : host_memory();
}

// sim's cudaMalloc: null when the device (the cap) is full. As on a GPU it is a potentially
// unsafe call while a stream captures (kernels/cuda/capture_rules.h), and fails after a
// sticky error. With sim-check, each block has red zones of check::kRedZone bytes on both
// sides, so an overrun lands in memory sim-check knows, not in a neighbouring block.
void* raw_allocate(size_t n, int index) {
  gpu::check_unsafe_call(str("cudaMalloc(", n, " bytes) on sim:", index).c_str());
  check_sticky_error(index, "cudaMalloc");
  n = (n + 255) & ~size_t(255);
  const size_t cap = device_memory_cap();
  Reserved& r = reserved(index);
  std::lock_guard<std::mutex> lock(r.mutex);
  if (cap && r.bytes + n > cap) return nullptr;
  const size_t red_zone = check::instrumented() ? check::kRedZone : 0;
  auto* base = static_cast<char*>(std::aligned_alloc(256, n + 2 * red_zone));
  if (!base) return nullptr;
  void* p = base + red_zone;
  r.sizes.emplace(p, n);
  r.bytes += n;
  if (red_zone) check::on_raw_alloc(p, n);
  return p;
}

void raw_release(void* p, int index) {
  Reserved& r = reserved(index);
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.sizes.find(p);
    if (it != r.sizes.end()) {
      r.bytes -= it->second;
      r.sizes.erase(it);
    }
  }
  if (!check::instrumented()) return std::free(p);
  check::on_raw_free(p);
  std::free(static_cast<char*>(p) - check::kRedZone);
}

}  // namespace rg::sim
