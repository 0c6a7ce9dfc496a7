// See sticky_error.h. One slot per sim device under a mutex; an atomic count of poisoned
// devices keeps the checks on every launch and query free while none is.
#include "kernels/sim/sticky_error.h"

#include <atomic>
#include <mutex>

#include "core/device.h"
#include "core/error.h"
#include "kernels/sim/interpreter.h"
#include "kernels/sim/stream_queue.h"

namespace rg::sim {

namespace {

std::mutex g_mutex;
std::string g_errors[kMaxDeviceIndex];
std::atomic<int> g_poisoned{0};

int slot(int index) {
  RG_CHECK(index >= 0 && index < kMaxDeviceIndex, "sim: device index ", index, " out of range [0, ",
           kMaxDeviceIndex, ")");
  return index;
}

}  // namespace

void set_sticky_error(int index, const std::string& error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::string& e = g_errors[slot(index)];
  if (!e.empty()) return;
  e = error;
  g_poisoned++;
}

bool has_sticky_error(int index) {
  if (g_poisoned == 0) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  return !g_errors[slot(index)].empty();
}

void check_sticky_error(int index, const char* operation, const char* kernel) {
  if (g_poisoned == 0) return;
  std::string error;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    error = g_errors[slot(index)];
  }
  RG_CHECK(error.empty(), operation, kernel ? str(" of kernel '", kernel, "'") : std::string(),
           " on sim:", index, " failed: ", error,
           " (a sticky error: the device's context is unusable until the process exits, as on a "
           "GPU)");
}

void clear_sticky_error_for_tests(int index) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::string& e = g_errors[slot(index)];
  if (e.empty()) return;
  e.clear();
  g_poisoned--;
}

void trap(CallSite site) {
  const LaunchSpec* spec = current_launch();
  RG_CHECK(spec && tls_block && tls_thread, "sim: __trap() called outside a kernel");
  const uint3 b = tls_block->block_idx, t = tls_thread->thread_idx;
  const int index = device_of_token(spec->stream);
  const std::string error =
      str("cudaErrorLaunchFailure (unspecified launch failure): kernel '", spec->name, "' block (",
          b.x, ",", b.y, ",", b.z, ") thread (", t.x, ",", t.y, ",", t.z, ") executed __trap() at ",
          site.file ? site.file : "?", ":", site.line);
  set_sticky_error(index, error);
  RG_FAIL("sim: ", error, " on sim:", index);
}

}  // namespace rg::sim
