// The topology-aware (two-level) all-reduce and the host layout it is chosen from. Ranks are
// threads pretending to run on hosts (make_thread_groups' host_of), so every rank's result
// can be compared byte for byte.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "dist/threads_group.h"
#include "dist/topology.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/threads_allreduce.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

namespace {

Options forcing(AllreduceAlgorithm algorithm) {
  Options options;
  options.allreduce_algorithm = algorithm;
  options.direct_bytes = 0;  // every size takes the algorithm under test
  options.single_copy_bytes = 0;
  return options;
}

std::vector<std::vector<char>> allreduce_on_hosts(const std::vector<int>& host_of, DType dtype,
                                                  CombineOp op, int64_t length,
                                                  const Options& options) {
  return allreduce_on_threads(static_cast<int>(host_of.size()), dtype, op, length, options,
                              host_of);
}

}  // namespace

TEST_CASE("hosts are numbered by their lowest rank; each rank sees its host's ranks") {
  CHECK(number_hosts({"b", "b", "a", "c", "a"}) == std::vector<int>{0, 0, 1, 2, 1});
  HostLayout layout = host_layout({0, 1, 0, 1, 0, 1}, 3, 6);
  CHECK(layout.hosts == 2);
  CHECK(layout.host == 1);
  CHECK(layout.uniform);
  CHECK(layout.local == std::vector<int>{1, 3, 5});
  CHECK(layout.local_index == 1);
  CHECK(layout.counterparts == std::vector<int>{2, 3});
  CHECK_FALSE(host_layout({0, 0, 0, 1}, 3, 4).uniform);
  HostLayout one = host_layout({}, 2, 4);  // unknown: one host
  CHECK(one.hosts == 1);
  CHECK(one.local == std::vector<int>{0, 1, 2, 3});
  CHECK(one.counterparts == std::vector<int>{2});
}

TEST_CASE("two-level all-reduce equals the f64 reference and is bit-identical on every rank") {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 2, 2}, {0, 1, 0, 1}, {0, 1, 2}, {0, 0, 0}};
  for (const auto& host_of : layouts) {
    for (DType dtype : kAllDtypes) {
      for (CombineOp op : {CombineOp::sum, CombineOp::avg, CombineOp::max}) {
        if (!supports(dtype, op)) continue;
        for (int64_t length :
             {int64_t(0), int64_t(1), int64_t(5), int64_t(1001), int64_t(200003)}) {
          if (length > 1001 && op != CombineOp::sum) continue;
          CAPTURE(host_of.size());
          CAPTURE(host_of[1]);
          CAPTURE(length);
          INFO(dtype_name(dtype), " ", combine_op_name(op));
          std::vector<std::vector<char>> results;
          REQUIRE_NOTHROW(results = allreduce_on_hosts(host_of, dtype, op, length,
                                                       forcing(AllreduceAlgorithm::two_level)));
          for (size_t r = 1; r < results.size(); ++r) CHECK(results[r] == results[0]);
        }
      }
    }
  }
}

TEST_CASE("two-level all-reduce repeats its bits run to run; the flat ring agrees to rounding") {
  const std::vector<int> host_of = {0, 0, 0, 1, 1, 1};
  auto first = allreduce_on_hosts(host_of, DType::f64, CombineOp::sum, 100003,
                                  forcing(AllreduceAlgorithm::two_level));
  auto again = allreduce_on_hosts(host_of, DType::f64, CombineOp::sum, 100003,
                                  forcing(AllreduceAlgorithm::two_level));
  CHECK(first == again);
  // Another summation order: equal to the flat ring's result to rounding, not bit for bit.
  auto flat = allreduce_on_hosts(host_of, DType::f64, CombineOp::sum, 100003,
                                 forcing(AllreduceAlgorithm::ring));
  REQUIRE(flat[0].size() == first[0].size());
  const auto* a = reinterpret_cast<const double*>(first[0].data());
  const auto* b = reinterpret_cast<const double*>(flat[0].data());
  int64_t worst = 0;
  for (int64_t i = 0; i < 100003; ++i)
    if (std::fabs(a[i] - b[i]) > std::fabs(a[worst] - b[worst])) worst = i;
  CHECK(std::fabs(a[worst] - b[worst]) <= 1e-12 * (1 + std::fabs(b[worst])));
}

TEST_CASE("uneven hosts fall back to the ring; auto takes two levels only across hosts") {
  // 3 ranks on host 0, 1 on host 1: two_level does not fit, the ring runs, results are right.
  auto results = allreduce_on_hosts({0, 0, 0, 1}, DType::f32, CombineOp::sum, 5000,
                                    forcing(AllreduceAlgorithm::two_level));
  for (size_t r = 1; r < results.size(); ++r) CHECK(results[r] == results[0]);
  results = allreduce_on_hosts({0, 0, 1, 1}, DType::bf16, CombineOp::sum, 70001,
                               forcing(AllreduceAlgorithm::automatic));
  for (size_t r = 1; r < results.size(); ++r) CHECK(results[r] == results[0]);
}

TEST_CASE("across hosts the two-level all-reduce sends 2/3 of the flat ring's bytes") {
  // 2 hosts of 2 ranks, numbered host by host: the flat ring crosses between the hosts on 2 of
  // its 4 links (1 -> 2 and 3 -> 0), each carrying 2 (N-1)/N * B = 1.5 B; the two-level one
  // sends each rank's cross-host shard ring 2 (H-1)/H * B/L = B/2, 2 B in all (the least
  // possible: each host must receive B values). Total bytes are equal: 1.5 B per rank.
  const std::vector<int> host_of = {0, 0, 1, 1};
  const int64_t length = 1 << 16;  // f32: 256 KiB
  const uint64_t bytes = length * 4;
  for (AllreduceAlgorithm algorithm : {AllreduceAlgorithm::ring, AllreduceAlgorithm::two_level}) {
    const LinkTierBytes sent = allreduce_bytes_by_tier(host_of, length, forcing(algorithm)).sent;
    const uint64_t network = sent.network, all = sent.network + sent.within_host;
    CAPTURE(static_cast<int>(algorithm));
    CHECK(all == 4 * (3 * bytes / 2));
    CHECK(network == (algorithm == AllreduceAlgorithm::ring ? 3 * bytes : 2 * bytes));
  }
}
