// The strided elementwise path's 64-bit index math, which runs only when an operand's
// offsets reach 2^31: a 2-element view of a 2 GiB bool tensor on sim, 2^31 elements apart.
// The storage is never touched beyond those two elements, so the pages stay unmapped.
// Its own executable: under sim-check every byte of the block would be shadowed.
#include <doctest/doctest.h>

#include "tests/kernels/helpers.h"

using namespace rg;

TEST_CASE("sim: strided elementwise with offsets beyond 2^31 (64-bit index path)") {
  const Device sim(DeviceType::sim);
  const int64_t far = int64_t(1) << 31;
  Tensor big = empty({far + 1}, DType::b8, sim);
  Tensor ends = make_view(big, {2}, {far}, 0);  // elements 0 and 2^31
  kernel_table(DeviceType::sim).fill(ends, 1.0);
  Tensor middle = make_view(big, {1}, {1}, far / 2);
  kernel_table(DeviceType::sim).fill(middle, 0.0);
  Tensor out = empty({3}, DType::b8, sim);
  Tensor picked = make_view(big, {3}, {far / 2}, 0);  // 0, 2^30, 2^31
  kernel_table(DeviceType::sim).copy(out, picked);
  std::vector<double> got = test::values(out);
  CHECK(got == std::vector<double>{1, 0, 1});
}
