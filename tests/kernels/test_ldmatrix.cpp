// ldmatrix and cp.async on sim (kernels/cuda/ldmatrix.cuh): the registers each lane gets
// against the PTX ISA's figures for ldmatrix.m8n8.x4(.trans).b16 (lane l = 4 g + t gets,
// in register m, row g / columns 2t, 2t + 1 of matrix m, or rows 2t, 2t + 1 of column g
// with .trans), the rows addressed lane by lane (lanes 8m..8m+7 name matrix m's rows, in
// any order in memory), the loads feeding a real mma, and cp.async's copy, zero fill and
// commit-before-wait rule.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/cuda/ldmatrix.cuh"
#include "kernels/cuda/warp_mma.cuh"
#include "tests/sim_fault.h"

namespace {

using namespace rg::sim;

// Lane l names row `rows[l]` (of 16 bf16 values at `mem`); writes its 4 registers to
// out[4 l ..].
template <bool kTrans>
__global__ void load_x4(uint32_t* out, const uint16_t* mem, const int* rows) {
  const int lane = int(threadIdx.x);
  uint32_t r[4];
  ldmatrix_x4<kTrans>(r, mem + rows[lane] * 8);
  for (int m = 0; m < 4; ++m) out[4 * lane + m] = r[m];
}

LaunchConfig one_warp(const char* name) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.grid = dim3(1);
  cfg.block = dim3(32);
  return cfg;
}

// 32 rows of 8 values; value (row, col) = 256 row + col, so each names its place. Lane l
// points at row rows[l]: a permutation, so matrix m's row r is memory row rows[8 m + r].
struct Rows {
  alignas(16) uint16_t mem[32 * 8];
  int rows[32];
  Rows() {
    for (int l = 0; l < 32; ++l) rows[l] = (l * 13 + 5) % 32;
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 8; ++c) mem[r * 8 + c] = uint16_t(256 * r + c);
  }
  uint16_t value(int matrix, int row, int col) const {
    return mem[rows[8 * matrix + row] * 8 + col];
  }
};

}  // namespace

TEST_CASE("ldmatrix x4 on sim: lane 4g + t gets row g, columns 2t and 2t + 1 of each matrix") {
  Rows in;
  std::vector<uint32_t> out(128);
  launch(load_x4<false>, one_warp("ldmatrix"), out.data(), in.mem, in.rows);
  for (int lane = 0; lane < 32; ++lane)
    for (int m = 0; m < 4; ++m) {
      const int g = lane / 4, t = lane % 4;
      INFO("lane ", lane, " register ", m);
      CHECK((out[4 * lane + m] & 0xffffu) == in.value(m, g, 2 * t));
      CHECK((out[4 * lane + m] >> 16) == in.value(m, g, 2 * t + 1));
    }
  // lane 5 (g 1, t 1), register 2: matrix 2's row 1, columns 2 and 3 (the ISA's figure)
  CHECK(out[4 * 5 + 2] == (uint32_t(in.value(2, 1, 3)) << 16 | in.value(2, 1, 2)));
}

TEST_CASE("ldmatrix x4 .trans on sim: lane 4g + t gets rows 2t and 2t + 1 of column g") {
  Rows in;
  std::vector<uint32_t> out(128);
  launch(load_x4<true>, one_warp("ldmatrix_trans"), out.data(), in.mem, in.rows);
  for (int lane = 0; lane < 32; ++lane)
    for (int m = 0; m < 4; ++m) {
      const int g = lane / 4, t = lane % 4;
      INFO("lane ", lane, " register ", m);
      CHECK((out[4 * lane + m] & 0xffffu) == in.value(m, 2 * t, g));
      CHECK((out[4 * lane + m] >> 16) == in.value(m, 2 * t + 1, g));
    }
}

namespace {

// One bf16 mma with A (16 x 16, row-major) by ldmatrix and B (16 x 8, row-major, so by
// .trans) from memory; d row-major 16 x 8.
__global__ void mma_from_ldmatrix(float* d, const uint16_t* a, const uint16_t* b) {
  const int lane = int(threadIdx.x), m = lane / 8;
  uint32_t fa[4], f[4];
  ldmatrix_x4<false>(fa, a + (m % 2 * 8 + lane % 8) * 16 + m / 2 * 8);  // rows 0-7 / 8-15
  ldmatrix_x4<true>(f, b + (m % 2 * 8 + lane % 8) * 8);                 // k rows 0-7, 8-15 (m < 2)
  const uint32_t fb[2] = {f[0], f[1]};
  float acc[4] = {};
  mma<MmaBf16>(acc, fa, fb);
  for (int r = 0; r < 4; ++r) d[c_row(lane, r) * 8 + c_col(lane, r)] = acc[r];
}

}  // namespace

TEST_CASE("ldmatrix on sim: A and .trans B fragments give the exact bf16 product") {
  alignas(16) uint16_t a[16 * 16], b[16 * 8];
  for (int i = 0; i < 16 * 16; ++i) a[i] = float_to_bf16(float(i % 7 - 3) / 4).bits;
  for (int i = 0; i < 16 * 8; ++i) b[i] = float_to_bf16(float(i % 5 - 2) / 2).bits;
  std::vector<float> d(16 * 8);
  launch(mma_from_ldmatrix, one_warp("ldmatrix_mma"), d.data(), a, b);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float want = 0;
      for (int k = 0; k < 16; ++k)
        want += bf16_to_float(bf16{a[i * 16 + k]}) * bf16_to_float(bf16{b[k * 8 + j]});
      INFO("row ", i, " col ", j);
      CHECK(d[i * 8 + j] == want);  // quarters and halves: exact
    }
}

namespace {

__global__ void copy_async(uint32_t* dst, const uint32_t* src, int valid_chunks) {
  const int lane = int(threadIdx.x);
  cp_async16(dst + 4 * lane, lane < valid_chunks ? src + 4 * lane : src, lane < valid_chunks);
  cp_async_commit();
  cp_async_wait<0>();
}

// Copies, then waits without committing them (broken) or after a commit.
__global__ void wait_uncommitted(uint32_t* dst, const uint32_t* src, bool commit) {
  const int lane = int(threadIdx.x);
  cp_async16(dst + 4 * lane, src + 4 * lane, true);
  if (commit) cp_async_commit();
  cp_async_wait<0>();
}

__global__ void misaligned_row(uint32_t* out, const uint16_t* mem) {
  uint32_t r[4];
  ldmatrix_x4<false>(r, mem + 1);
  out[threadIdx.x] = r[0];
}

}  // namespace

TEST_CASE("cp.async on sim: copies 16 bytes, or writes zeros with src-size 0") {
  std::vector<uint32_t> src(128), dst(128, 0xdeadbeefu);
  for (int i = 0; i < 128; ++i) src[i] = uint32_t(i + 1);
  launch(copy_async, one_warp("cp_async"), dst.data(), src.data(), 20);
  for (int i = 0; i < 128; ++i) {
    INFO("word ", i);
    CHECK(dst[i] == (i < 4 * 20 ? uint32_t(i + 1) : 0u));
  }
}

TEST_CASE("ldmatrix on sim: a row address off 16 bytes traps, as the ISA requires alignment") {
  alignas(16) uint16_t mem[64] = {};
  std::vector<uint32_t> out(32);
  rg::test::ClearStickyError clear{0};  // the trap poisons sim:0 (null stream), as a GPU's
  CHECK_THROWS_WITH(launch(misaligned_row, one_warp("ldmatrix_misaligned"), out.data(), mem),
                    doctest::Contains("ldmatrix_misaligned"));
}

TEST_CASE("cp.async on sim: a wait_group over copies never committed is a sync error") {
  std::vector<uint32_t> src(128, 1), dst(128, 0);
  CHECK_THROWS_WITH(
      launch(wait_uncommitted, one_warp("wait_uncommitted"), dst.data(), src.data(), false),
      doctest::Contains("since its last cp.async.commit_group"));
  rg::sim::check::take_reports();  // sim-check's synccheck report of it (instrumented runs)
  CHECK_NOTHROW(launch(wait_uncommitted, one_warp("wait_committed"), dst.data(), src.data(), true));
  CHECK(dst[127] == 1u);
}
