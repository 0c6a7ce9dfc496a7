// sim-check: theoretical occupancy of a kernel on an H200 (sm_90), from what ptxas reports
// for it (registers per thread, static shared memory per block) and the block size of its
// launch, the way the CUDA occupancy calculator computes it:
//   registers  allocated per warp in units of 256 (a thread's count rounded up to 8);
//              65536 per SM
//   shared     228 KiB per SM, plus 1 KiB the system reserves per block
//   threads    64 warps and 32 blocks per SM
// Occupancy = resident warps / 64. The limiter is the resource that allows fewest blocks.
#pragma once
#include <cstddef>

namespace rg::sim::check {

enum class OccupancyLimit : char { warps = 'W', blocks = 'B', registers = 'R', shared = 'S' };

struct Occupancy {
  int blocks_per_sm = 0;
  double fraction = 0;  // resident warps / 64
  OccupancyLimit limit = OccupancyLimit::warps;
};

Occupancy h200_occupancy(int registers_per_thread, size_t shared_bytes_per_block,
                         unsigned threads_per_block);

}  // namespace rg::sim::check
