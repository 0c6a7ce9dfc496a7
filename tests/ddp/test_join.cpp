// Uneven inputs with nn::Join: ranks with 5, 4 and 2 batches finish (a hang would fail the
// group's timeout instead), all ranks hold the same bits, and the model equals one process
// that trains, at each step, on the union of the batches of the ranks that still had data.
// Even inputs give the same bits with and without Join; misuse is a clear rg::Error.
#include <doctest/doctest.h>

#include <functional>
#include <sstream>
#include <tuple>

#include "dist/threads_group.h"
#include "join_training.h"
#include "nn/join.h"
#include "nn/layers.h"

using namespace rg;
using namespace rg::testing;

namespace {

std::string describe(const JoinSetup& s) {
  std::ostringstream os;
  os << s.base.model << " micro_batches=";
  for (int n : s.micro_batches) os << n << ",";
  os << " accum=" << s.accum << " cap_mb=" << s.base.bucket_cap_mb
     << " grad_view=" << s.base.grad_view << " opt=" << s.base.optimizer << " clip=" << s.clip;
  return os.str();
}

void check_union_equivalence(const JoinSetup& s) {
  INFO(describe(s));
  std::vector<Tensor> reference = train_union_reference(s);
  std::vector<std::vector<Tensor>> ranks = train_join_threads(s);
  double diff = max_relative_difference(ranks[0], reference);
  INFO("max relative difference to the union run: " << diff);
  CHECK(diff <= 1e-10);
  for (size_t r = 1; r < ranks.size(); ++r) CHECK(bit_identical(ranks[r], ranks[0]));
}

JoinSetup uneven(std::vector<int> micro_batches, int accum = 1) {
  JoinSetup s;
  s.micro_batches = std::move(micro_batches);
  s.accum = accum;
  s.base.world = static_cast<int>(s.micro_batches.size());
  return s;
}

}  // namespace

// Ranks with 3, 1 and 2 batches counting rank + 1 samples each: every rank reads the same
// active ranks and samples G per step, and the last step reports that all have joined.
TEST_CASE("Join: each step's active ranks and samples, the same on every rank") {
  const int batches[] = {3, 1, 2};
  std::vector<std::vector<std::tuple<bool, int, int64_t>>> seen(3);  // joined, active, G
  dist::Options options;
  options.timeout = std::chrono::milliseconds(20000);
  dist::run_threads(
      3,
      [&](dist::ProcessGroup& group) {
        const int rank = group.rank();
        Generator gen{1, 0};
        auto model =
            std::make_shared<nn::MLP>(std::vector<int64_t>{4, 3}, nn::Activation::relu, true, &gen);
        nn::DistributedDataParallel ddp(model, group);
        nn::Join join(ddp);
        for (int t = 0;; ++t) {
          nn::JoinStep step = t < batches[rank] ? join.step(rank + 1) : join.step_joined();
          seen[rank].emplace_back(step.joined, step.active_ranks, step.samples);
          if (step.all_joined) break;
          if (step.joined)
            join.shadow_backward();
          else
            sum(ddp.forward(randn({2, 4}, DType::f32, kCPU, &gen))).backward();
        }
      },
      options);
  const std::vector<std::pair<int, int64_t>> expected = {{3, 6}, {2, 4}, {1, 1}, {0, 0}};
  for (int r = 0; r < 3; ++r) {
    REQUIRE(seen[r].size() == expected.size());
    for (int t = 0; t < 4; ++t) {
      auto [joined, active, samples] = seen[r][t];
      CHECK(joined == (t >= batches[r]));
      CHECK(active == expected[t].first);
      CHECK(samples == expected[t].second);
    }
  }
}

TEST_CASE("Join: 3 ranks with 5, 4 and 2 batches equal one process on each step's union") {
  check_union_equivalence(uneven({5, 4, 2}));
  JoinSetup s = uneven({5, 4, 2});
  s.base.bucket_cap_mb = s.base.first_bucket_cap_mb = 0.0005;  // several buckets
  s.base.grad_view = true;
  check_union_equivalence(s);
  s.base.grad_view = false;
  s.base.overlap = false;
  s.clip = 0;
  check_union_equivalence(s);
}

TEST_CASE("Join: a GPT (it has buffers) with AdamW, a rank without any batch, rank 0 out first") {
  JoinSetup s = uneven({2, 5, 0});
  s.base.model = "gpt";
  s.base.optimizer = "adamw";
  s.base.micro = 2;
  s.base.bucket_cap_mb = 0.002;
  check_union_equivalence(s);
}

TEST_CASE("Join: accumulation with uneven micro-batch counts (no_sync inside a step)") {
  check_union_equivalence(uneven({5, 4, 2}, 2));
  check_union_equivalence(uneven({7, 3, 1, 4}, 3));
}

TEST_CASE("Join: even inputs give the same bits with and without Join") {
  for (int accum : {1, 2}) {
    JoinSetup with = uneven({4, 4, 4}, accum);
    JoinSetup without = with;
    without.use_join = false;
    INFO(describe(with));
    std::vector<std::vector<Tensor>> a = train_join_threads(with);
    std::vector<std::vector<Tensor>> b = train_join_threads(without);
    for (size_t r = 0; r < a.size(); ++r) CHECK(bit_identical(a[r], b[r]));
    CHECK(max_relative_difference(a[0], train_union_reference(with)) <= 1e-10);
  }
}
