// The warp-level mma primitive (kernels/cuda/warp_mma.cuh) on sim: its fragment layouts
// against entries written out from the PTX ISA's figures, and one warp's product against a
// plain matrix product, for both shapes (bf16 m16n8k16, tf32 m16n8k8).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/warp_mma.cuh"

namespace {

using namespace rg::sim;

// One warp: d = a b + c, a 16 x K, b K x 8, c and d 16 x 8, all row-major f32 in memory.
template <typename M>
__global__ void one_mma(float* d, const float* a, const float* b, const float* c) {
  const int lane = int(threadIdx.x);
  uint32_t fa[4] = {}, fb[2] = {};
  load_a<M>(
      fa, [&](int r, int k) { return M::from_float(a[r * M::K + k]); }, lane);
  load_b<M>(
      fb, [&](int k, int n) { return M::from_float(b[k * 8 + n]); }, lane);
  float acc[4];
  for (int r = 0; r < 4; ++r) acc[r] = c[c_row(lane, r) * 8 + c_col(lane, r)];
  mma<M>(acc, fa, fb);
  for (int r = 0; r < 4; ++r) d[c_row(lane, r) * 8 + c_col(lane, r)] = acc[r];
}

// x as the tensor core sees it.
template <typename M>
double rounded(float x) {
  if constexpr (std::is_same_v<M, MmaBf16>)
    return bf16_to_float(float_to_bf16(x));
  else
    return to_tf32(x);
}

template <typename M>
void check_product(bool exact_inputs) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> small(-16, 16);
  std::uniform_real_distribution<float> real(-2, 2);
  auto value = [&] { return exact_inputs ? float(small(gen)) / 8 : real(gen); };
  std::vector<float> a(16 * M::K), b(M::K * 8), c(16 * 8), d(16 * 8, 0.f);
  for (float& x : a) x = value();
  for (float& x : b) x = value();
  for (float& x : c) x = value();
  LaunchConfig cfg;
  cfg.name = "one_mma";
  cfg.grid = dim3(1);
  cfg.block = dim3(32);
  launch(one_mma<M>, cfg, d.data(), a.data(), b.data(), c.data());
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double want = c[i * 8 + j];
      for (int k = 0; k < M::K; ++k) want += rounded<M>(a[i * M::K + k]) * rounded<M>(b[k * 8 + j]);
      INFO("row ", i, " col ", j);
      if (exact_inputs)
        CHECK(d[i * 8 + j] == want);  // eighths: every product and sum is exact in f32
      else
        CHECK(d[i * 8 + j] == doctest::Approx(want).epsilon(1e-5));
    }
}

}  // namespace

TEST_CASE("warp mma: fragment layouts are the PTX ISA's") {
  // lane 5: group 1, thread_in_group 1
  const int bf_a[8][2] = {{1, 2}, {1, 3}, {9, 2}, {9, 3}, {1, 10}, {1, 11}, {9, 10}, {9, 11}};
  for (int i = 0; i < 8; ++i) {
    CHECK(MmaBf16::a_row(5, i) == bf_a[i][0]);
    CHECK(MmaBf16::a_col(5, i) == bf_a[i][1]);
  }
  const int bf_b[4] = {2, 3, 10, 11};
  for (int i = 0; i < 4; ++i) {
    CHECK(MmaBf16::b_k(5, i) == bf_b[i]);
    CHECK(MmaBf16::b_n(5, i) == 1);
  }
  const int tf_a[4][2] = {{1, 1}, {9, 1}, {1, 5}, {9, 5}};
  for (int i = 0; i < 4; ++i) {
    CHECK(MmaTf32::a_row(5, i) == tf_a[i][0]);
    CHECK(MmaTf32::a_col(5, i) == tf_a[i][1]);
  }
  CHECK(MmaTf32::b_k(5, 0) == 1);
  CHECK(MmaTf32::b_k(5, 1) == 5);
  const int c[4][2] = {{1, 2}, {1, 3}, {9, 2}, {9, 3}};
  for (int r = 0; r < 4; ++r) {
    CHECK(c_row(5, r) == c[r][0]);
    CHECK(c_col(5, r) == c[r][1]);
  }
  for (int lane = 0; lane < 32; ++lane)  // bf16 accumulators are the next A fragment
    for (int i = 0; i < 8; ++i) {
      CHECK(MmaBf16::a_row(lane, i) == c_row(lane, MmaBf16::c_element(i)));
      CHECK(MmaBf16::a_col(lane, i) == 8 * MmaBf16::c_tile(i) + c_col(lane, MmaBf16::c_element(i)));
    }
  CHECK(MmaBf16::a_row(31, 7) == 15);  // the last lane holds the far corners
  CHECK(MmaBf16::a_col(31, 7) == 15);
  CHECK(MmaTf32::a_col(31, 3) == 7);
}

TEST_CASE("warp mma: bf16 m16n8k16 on sim is the exact matrix product") {
  check_product<MmaBf16>(true);
}

TEST_CASE("warp mma: tf32 m16n8k8 on sim is the product of the rounded inputs") {
  check_product<MmaTf32>(true);
  check_product<MmaTf32>(false);
  CHECK(to_tf32(1.0f + 1.0f / 4096) == 1.0f);  // below the 10-bit mantissa
  CHECK(to_tf32(1.0f + 1.0f / 512) == 1.0f + 1.0f / 512);
}

TEST_CASE("warp mma: a partial warp is a sync error") {
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8), d(16 * 8);
  LaunchConfig cfg;
  cfg.name = "one_mma";
  cfg.grid = dim3(1);
  cfg.block = dim3(16);
  CHECK_THROWS_WITH(launch(one_mma<MmaBf16>, cfg, d.data(), a.data(), b.data(), c.data()),
                    doctest::Contains("lanes that do not exist"));
}
