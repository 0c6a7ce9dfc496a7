// DistributedSampler: PyTorch semantics (disjoint shards that cover the dataset, equal
// counts by padding or dropping, same permutation on every rank, reshuffle per epoch).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "data/distributed_sampler.h"

using namespace rg::data;

namespace {

std::vector<std::vector<int64_t>> shards(int64_t n, int64_t world, bool shuffle, bool drop_last,
                                         int64_t epoch, uint64_t seed = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < world; ++r) {
    DistributedSampler s(n, {world, r, shuffle, seed, drop_last});
    s.set_epoch(epoch);
    out.push_back(s.indices());
  }
  return out;
}

}  // namespace

TEST_CASE("sampler: shards are disjoint and cover the dataset when n divides evenly") {
  for (bool shuffle : {false, true}) {
    auto parts = shards(12, 4, shuffle, false, 0);
    std::multiset<int64_t> all;
    for (const auto& p : parts) {
      CHECK(p.size() == 3);
      all.insert(p.begin(), p.end());
    }
    CHECK(all.size() == 12);
    for (int64_t i = 0; i < 12; ++i) CHECK(all.count(i) == 1);
  }
  // Without shuffling rank r takes r, r + world, ... (PyTorch's interleaving).
  CHECK(shards(12, 4, false, false, 0)[1] == std::vector<int64_t>{1, 5, 9});
}

TEST_CASE("sampler: equal counts by padding with repeated indices") {
  auto parts = shards(10, 4, true, false, 3);
  std::map<int64_t, int> count;
  for (const auto& p : parts) {
    CHECK(p.size() == 3);  // ceil(10 / 4)
    for (int64_t i : p) count[i]++;
  }
  CHECK(count.size() == 10);  // every index is visited
  int repeats = 0;
  for (auto& [i, c] : count) repeats += c - 1;
  CHECK(repeats == 2);  // 12 slots for 10 examples
  // More ranks than examples: every rank still gets one.
  for (const auto& p : shards(2, 5, true, false, 0)) CHECK(p.size() == 1);
}

TEST_CASE("sampler: drop_last drops the tail instead of padding") {
  auto parts = shards(10, 4, true, true, 1);
  std::set<int64_t> seen;
  for (const auto& p : parts) {
    CHECK(p.size() == 2);                              // floor(10 / 4)
    for (int64_t i : p) CHECK(seen.insert(i).second);  // no repeats
  }
  CHECK(seen.size() == 8);
  CHECK_THROWS_AS(DistributedSampler(3, {4, 0, true, 0, true}), rg::Error);
}

TEST_CASE("sampler: reshuffles per epoch, deterministically from (seed, epoch)") {
  auto e0 = shards(100, 2, true, false, 0);
  auto e1 = shards(100, 2, true, false, 1);
  auto e0_again = shards(100, 2, true, false, 0);
  CHECK(e0 == e0_again);
  CHECK(e0[0] != e1[0]);
  CHECK(shards(100, 2, true, false, 0, /*seed=*/5)[0] != e0[0]);
  std::vector<int64_t> sorted = e0[0];
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted != e0[0]);  // actually shuffled
}

TEST_CASE("sampler: every rank sees the same permutation (rank r = every world-th element)") {
  const auto perm = random_permutation(37, 11, 2);
  std::vector<int64_t> check = perm;
  std::sort(check.begin(), check.end());
  for (int64_t i = 0; i < 37; ++i) CHECK(check[i] == i);
  auto parts = shards(37, 3, true, false, 2, 11);
  for (int64_t r = 0; r < 3; ++r)
    for (size_t k = 0; k < parts[r].size(); ++k) {
      const int64_t pos = r + 3 * static_cast<int64_t>(k);
      CHECK(parts[r][k] == perm[pos % 37]);  // padding repeats the permutation's head
    }
}

TEST_CASE("sampler: bad arguments are clear errors") {
  CHECK_THROWS_AS(DistributedSampler(0), rg::Error);
  CHECK_THROWS_AS(DistributedSampler(10, {0, 0}), rg::Error);
  CHECK_THROWS_WITH_AS(DistributedSampler(10, {2, 2}), doctest::Contains("rank 2"), rg::Error);
}
