#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/error.h"

namespace rg {

namespace {
std::atomic<int> g_num_threads{static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
}

void set_num_threads(int n) {
  RG_CHECK(n >= 1, "set_num_threads: expected n >= 1, got ", n);
  g_num_threads.store(n);
}

int get_num_threads() { return g_num_threads.load(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int threads = static_cast<int>(std::min<int64_t>(get_num_threads(), (n + grain - 1) / grain));
  if (threads <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  int64_t chunk = (n + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end) fn(begin, end);
  }
}

}  // namespace rg
