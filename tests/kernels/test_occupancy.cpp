// sim-check's H200 occupancy model (kernels/sim/check/occupancy.h) against answers worked out
// by hand from the sm_90 limits: 64 warps, 32 blocks, 65536 registers (256 per warp
// allocation unit) and 228 KiB of shared memory (+1 KiB per block) per SM.
#include <doctest/doctest.h>

#include "core/error.h"
#include "kernels/sim/check/occupancy.h"

using rg::sim::check::h200_occupancy;
using rg::sim::check::OccupancyLimit;

TEST_CASE("occupancy: few registers and no shared memory fill the SM with warps") {
  auto o = h200_occupancy(32, 0, 256);  // 8 warps a block: 8 blocks reach 64 warps
  CHECK(o.blocks_per_sm == 8);
  CHECK(o.fraction == doctest::Approx(1.0));
  CHECK(o.limit == OccupancyLimit::warps);
}

TEST_CASE("occupancy: registers limit it") {
  // 128 registers x 32 lanes = 4096 a warp: 16 warps, 2 blocks of 8 warps
  auto o = h200_occupancy(128, 0, 256);
  CHECK(o.blocks_per_sm == 2);
  CHECK(o.fraction == doctest::Approx(0.25));
  CHECK(o.limit == OccupancyLimit::registers);
  // 33 registers round up to 40: 1280 a warp, 51 warps, 6 blocks of 8 warps = 48 warps
  auto odd = h200_occupancy(33, 0, 256);
  CHECK(odd.blocks_per_sm == 6);
  CHECK(odd.fraction == doctest::Approx(0.75));
}

TEST_CASE("occupancy: shared memory and the block count limit it") {
  // 100 KiB a block (+1 KiB reserved): 2 blocks in 228 KiB
  auto big = h200_occupancy(16, 100 * 1024, 128);
  CHECK(big.blocks_per_sm == 2);
  CHECK(big.limit == OccupancyLimit::shared);
  CHECK(big.fraction == doctest::Approx(8.0 / 64));
  // 32-thread blocks: at most 32 blocks, so half the warps
  auto tiny = h200_occupancy(16, 0, 32);
  CHECK(tiny.blocks_per_sm == 32);
  CHECK(tiny.limit == OccupancyLimit::blocks);
  CHECK(tiny.fraction == doctest::Approx(0.5));
}

TEST_CASE("occupancy: impossible inputs are rejected with their value") {
  CHECK_THROWS_WITH_AS(h200_occupancy(32, 0, 2048), doctest::Contains("2048"), rg::Error);
  CHECK_THROWS_WITH_AS(h200_occupancy(300, 0, 128), doctest::Contains("300"), rg::Error);
  CHECK_THROWS_WITH_AS(h200_occupancy(32, 300 * 1024, 128), doctest::Contains("307200"), rg::Error);
}
