// Recursive doubling (dist/recursive_doubling.cpp): every world size, power of two or not,
// gives the reference's result with identical bits on every rank; in f64 the bits are exactly
// the documented summation tree's; across hosts the automatic choice takes it up to
// Options::recursive_doubling_bytes, as its bytes by link tier show.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "dist/threads_group.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/threads_allreduce.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

Options doubling_options() {
  Options options;
  options.allreduce_algorithm = AllreduceAlgorithm::recursive_doubling;
  options.direct_bytes = 0;  // every size takes recursive doubling
  options.single_copy_bytes = 0;
  return options;
}

// The sum recursive_doubling.cpp documents, element i: extras folded into rank r - P, then
// pairs at distance 1, 2, 4, ... combined lower rank first.
double tree_sum(int world, int64_t i) {
  int p = 1;
  while (p * 2 <= world) p *= 2;
  std::vector<double> v(p);
  for (int r = 0; r < p; ++r) v[r] = input_value(r, i);
  for (int r = p; r < world; ++r) v[r - p] = v[r - p] + input_value(r, i);
  for (int mask = 1; mask < p; mask *= 2) {
    std::vector<double> next(p);
    for (int r = 0; r < p; ++r) {
      const int q = r ^ mask;
      next[r] = r < q ? v[r] + v[q] : v[q] + v[r];
    }
    v = next;
  }
  return v[0];
}

}  // namespace

TEST_CASE("recursive doubling at every world size equals the reference, same bits on every rank") {
  for (int world = 1; world <= 8; ++world) {
    for (DType dtype : kAllDtypes) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        if (!supports(dtype, op)) continue;
        for (int64_t length : {int64_t(0), int64_t(1), int64_t(7), int64_t(1001)}) {
          CAPTURE(world);
          CAPTURE(length);
          INFO(dtype_name(dtype), " ", combine_op_name(op));
          std::vector<std::vector<char>> results;
          REQUIRE_NOTHROW(results =
                              allreduce_on_threads(world, dtype, op, length, doubling_options()));
          for (size_t r = 1; r < results.size(); ++r) CHECK(results[r] == results[0]);
        }
      }
    }
  }
}

TEST_CASE("recursive doubling in f64 gives exactly the documented summation tree's bits") {
  for (int world : {2, 3, 5, 6, 8}) {
    CAPTURE(world);
    const int64_t length = 4099;
    auto results =
        allreduce_on_threads(world, DType::f64, CombineOp::sum, length, doubling_options());
    std::vector<double> want(length);
    for (int64_t i = 0; i < length; ++i) want[i] = tree_sum(world, i);
    std::vector<char> want_bytes(length * sizeof(double));
    std::memcpy(want_bytes.data(), want.data(), want_bytes.size());
    CHECK(results[0] == want_bytes);
    CHECK(results == std::vector<std::vector<char>>(world, want_bytes));  // and run to run
    CHECK(allreduce_on_threads(world, DType::f64, CombineOp::sum, length, doubling_options()) ==
          results);
  }
}

TEST_CASE("across hosts, auto takes recursive doubling up to its limit, two levels above it") {
  // 2 hosts of 2 ranks: recursive doubling swaps within a host (mask 1), then across (mask 2):
  // every rank sends B within its host and B over the network. The two-level all-reduce
  // (above the limit) sends 2 B over the network in all; both send B per rank within hosts.
  const std::vector<int> host_of = {0, 0, 1, 1};
  const int64_t length = 4096;  // f32: 16 KiB
  const uint64_t bytes = length * 4;
  for (size_t limit : {size_t(0), size_t(bytes)}) {
    Options options;
    options.direct_bytes = 0;
    options.single_copy_bytes = 0;
    options.recursive_doubling_bytes = limit;
    const TierRun run = allreduce_bytes_by_tier(host_of, length, options);
    CAPTURE(limit);
    CHECK(run.sent.network == (limit ? 4 * bytes : 2 * bytes));
    CHECK(run.sent.within_host == 4 * bytes);
    for (int r = 1; r < 4; ++r) CHECK(run.results[r] == run.results[0]);
  }
}

TEST_CASE("RG_DIST_ALLREDUCE and RG_DIST_RECURSIVE_DOUBLING_BYTES are read and checked") {
  ::setenv("RG_DIST_ALLREDUCE", "recursive_doubling", 1);
  CHECK(default_allreduce_algorithm() == AllreduceAlgorithm::recursive_doubling);
  ::setenv("RG_DIST_ALLREDUCE", "doubling", 1);
  CHECK_THROWS_WITH_AS(default_allreduce_algorithm(),
                       doctest::Contains("RG_DIST_ALLREDUCE='doubling'"), Error);
  ::unsetenv("RG_DIST_ALLREDUCE");
  ::setenv("RG_DIST_RECURSIVE_DOUBLING_BYTES", "4096", 1);
  CHECK(default_recursive_doubling_bytes() == 4096);
  ::setenv("RG_DIST_RECURSIVE_DOUBLING_BYTES", "4k", 1);
  CHECK_THROWS_WITH_AS(default_recursive_doubling_bytes(),
                       doctest::Contains("RG_DIST_RECURSIVE_DOUBLING_BYTES"), Error);
  ::unsetenv("RG_DIST_RECURSIVE_DOUBLING_BYTES");
}
