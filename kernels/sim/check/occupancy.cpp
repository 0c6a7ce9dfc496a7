// The H200 occupancy model of occupancy.h.
#include "kernels/sim/check/occupancy.h"

#include <algorithm>

#include "core/error.h"

namespace rg::sim::check {

namespace {
constexpr int kWarpsPerSm = 64;
constexpr int kBlocksPerSm = 32;
constexpr int kRegistersPerSm = 65536;
constexpr int kRegisterUnit = 256;  // registers are allocated per warp in these units
constexpr size_t kSharedPerSm = 228 * 1024;
constexpr size_t kSharedReservedPerBlock = 1024;
constexpr size_t kSharedPerBlockMax = 227 * 1024;
}  // namespace

Occupancy h200_occupancy(int registers_per_thread, size_t shared_bytes_per_block,
                         unsigned threads_per_block) {
  if (threads_per_block == 0 || threads_per_block > 1024)
    throw Error(str("h200_occupancy: threads per block must be 1..1024, got ", threads_per_block));
  if (registers_per_thread < 0 || registers_per_thread > 255)
    throw Error(
        str("h200_occupancy: registers per thread must be 0..255, got ", registers_per_thread));
  if (shared_bytes_per_block > kSharedPerBlockMax)
    throw Error(str("h200_occupancy: shared memory per block must be <= ", kSharedPerBlockMax,
                    " bytes, got ", shared_bytes_per_block));
  int warps = static_cast<int>((threads_per_block + 31) / 32);
  int per_warp = (registers_per_thread + 7) / 8 * 8 * 32;
  per_warp = (per_warp + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  struct Candidate {
    int blocks;
    OccupancyLimit limit;
  };
  Candidate limits[] = {
      {kWarpsPerSm / warps, OccupancyLimit::warps},
      {kBlocksPerSm, OccupancyLimit::blocks},
      {per_warp ? kRegistersPerSm / per_warp / warps : kBlocksPerSm, OccupancyLimit::registers},
      {static_cast<int>(kSharedPerSm / (shared_bytes_per_block + kSharedReservedPerBlock)),
       OccupancyLimit::shared},
  };
  Candidate best = *std::min_element(std::begin(limits), std::end(limits),
                                     [](auto a, auto b) { return a.blocks < b.blocks; });
  return {best.blocks, double(best.blocks * warps) / kWarpsPerSm, best.limit};
}

}  // namespace rg::sim::check
