#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "core/chunk_pool.h"
#include "core/error.h"

namespace rg {

namespace {
std::atomic<int> g_num_threads{static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
thread_local int t_cap = 0;
thread_local bool t_in_region = false;  // inside a parallel_for chunk on this thread
}  // namespace

void set_num_threads(int n) {
  RG_CHECK(n >= 1, "set_num_threads: expected n >= 1, got ", n);
  g_num_threads.store(n);
}

int get_num_threads() { return g_num_threads.load(); }

int set_thread_num_threads_cap(int n) {
  RG_CHECK(n >= 0, "set_thread_num_threads_cap: expected n >= 0, got ", n);
  return std::exchange(t_cap, n);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int allowed = t_cap > 0 ? std::min(t_cap, get_num_threads()) : get_num_threads();
  int threads = static_cast<int>(std::min<int64_t>(allowed, n / std::max<int64_t>(grain, 1)));
  if (threads <= 1 || t_in_region || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  // One pool per calling thread: concurrent callers (ranks run as threads) don't share one.
  thread_local ChunkPool pool;
  const std::function<void(int64_t, int64_t)> body = [&fn](int64_t begin, int64_t end) {
    const bool outer = std::exchange(t_in_region, true);
    fn(begin, end);
    t_in_region = outer;
  };
  pool.run(n, threads, threads, body);
}

}  // namespace rg
