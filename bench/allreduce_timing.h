// Shared by bench/allreduce and its MPI twin bench/allreduce_mpi, so that both sides are
// timed the same way: one warm-up call, then a number of calls between two barriers; the
// time of one call is the mean (total / calls).
#pragma once
#include <algorithm>
#include <cstdint>

namespace rg::bench {

// Calls timed for one all-reduce of `bytes`: about 256 MiB of data in all, 3 to 200 calls.
inline int allreduce_iterations(int64_t bytes) {
  return static_cast<int>(
      std::clamp<int64_t>((int64_t(256) << 20) / std::max<int64_t>(bytes, 1), 3, 200));
}

// The latency rows (barrier, 8-byte all-reduce) are timed over more calls (2000 left the
// ratio swinging by 2x from one round to the next: a single preemption is 1 ms).
constexpr int kLatencyIterations = 20000;
constexpr int64_t kLatencyBytes = 8;

}  // namespace rg::bench
