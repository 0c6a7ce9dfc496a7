// Intra-op parallelism: a settable thread count and parallel_for over index ranges.
// Backed by OpenMP; safe to call from several threads at once (each caller gets its own
// team), which the distributed tests rely on (ranks run as threads of one process).
#pragma once
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

// Calls fn(begin, end) on disjoint chunks covering [0, n). Runs inline when n is below
// `grain` or one thread is set, so tiny ops pay no threading cost.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace rg
