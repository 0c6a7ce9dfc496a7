// Intra-op parallelism: a settable thread count and parallel_for over index ranges.
// Backed by a ChunkPool per calling thread (core/chunk_pool.h), whose caller never waits for
// a worker that has not started; safe to call from several threads at once (each caller has
// its own workers), which the distributed tests rely on (ranks run as threads of one process).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>

namespace rg {

void set_num_threads(int n);  // n >= 1; default: hardware concurrency
int get_num_threads();
// Caps parallel_for on the calling thread only (0, the default: no cap). A process group's
// communication thread sets 1: its reductions are memory-bound, and on a host shared by
// several ranks an OpenMP team (whose idle threads spin) takes the cores the other ranks
// need, which made tcp all-reduces of 512 KiB and up 10-50x slower on 2 cores.
// Returns the previous cap.
int set_thread_num_threads_cap(int n);

// Work (in elements) a task must have before a loop is split across threads; PyTorch's
// at::internal::GRAIN_SIZE is the same. Every parallel region ends at a barrier that waits
// for each thread of the team, so a region is only worth it when its share of work is far
// longer than the time a thread may spend descheduled when another process shares its core.
inline constexpr int64_t kGrainSize = 32768;

// Rows per task for rows of `row_elements` elements each: at least kGrainSize elements.
inline int64_t grain_rows(int64_t row_elements) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row_elements, 1));
}

// Calls fn(begin, end) on disjoint chunks covering [0, n). Uses at most n / grain threads
// (each gets at least `grain` items), so runs inline when n is below 2 * grain or one thread
// is set: small ops pay no threading cost and never wait on another thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace rg
