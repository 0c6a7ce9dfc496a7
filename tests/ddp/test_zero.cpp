// ZeRO stages 1 and 2 (DDPOptions::zero_stage with optim::ZeroAdamW), as tests: the same
// model as plain DDP with AdamW after 3 steps for world 1/2/4 x accumulation 1/2 (f64,
// relative difference <= 1e-12), with and without global-norm clipping; stage 2 bit-identical to
// stage 1; bit-identical ranks; one reduce-scatter per bucket per step and none inside no_sync;
// stage 2 releasing every .grad after a synchronised backward and every full bucket buffer after
// the step (stage 1 keeping them), and its result depending on the shards it keeps; optimizer state
// per rank 1/N of DDP's and (stage 2) gradient bytes per rank 1/N of DDP's per the memory report;
// resuming at another world size; and the errors of a wrong set-up.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "core/memory_accounting.h"
#include "dist/threads_group.h"
#include "equivalence.h"
#include "nn/layers.h"
#include "nn/optim/zero_adamw.h"

using namespace rg;
using namespace rg::testing;

namespace {

Setup zero_setup(int world, int accum) {
  Setup s;
  s.world = world;
  s.accum = accum;
  s.optimizer = "adamw";
  s.bucket_cap_mb = 1.0 / 1024;  // 1 KiB: several buckets, parameters cut across shards
  s.first_bucket_cap_mb = 0.5 / 1024;
  return s;
}

std::string describe(const Setup& s) {
  std::ostringstream os;
  os << s.model << " world=" << s.world << " accum=" << s.accum << " clip=" << s.clip;
  return os.str();
}

// What each stage keeps: stage 1 every .grad and every full bucket buffer, stage 2 no .grad
// after a synchronised backward and no full buffer after the step; inside no_sync both keep
// the accumulating .grad of every parameter.
void check_memory_behaviour(const Setup& s, const RankResult& rr) {
  const int64_t params = int64_t(rr.params.size()), buckets = rr.buckets_per_step.back();
  CHECK(rr.most_grads_after_sync == (s.zero == 2 ? 0 : params));
  CHECK(rr.most_full_buckets_after_step == (s.zero == 2 ? 0 : buckets));
  CHECK(rr.fewest_grads_after_no_sync == (s.accum > 1 ? params : -1));
}

// Both stages against one DDP run; stage 2 must also equal stage 1 bit for bit.
void check_zero_equals_ddp(Setup s) {
  INFO(describe(s));
  s.zero = 0;
  std::vector<RankResult> ddp = train_ddp_threads(s);
  const std::vector<Tensor> single = train_single_process(s);
  std::vector<Tensor> stage1;
  for (int stage : {1, 2}) {
    s.zero = stage;
    std::vector<RankResult> zero = train_ddp_threads(s);
    double diff = max_relative_difference(zero[0].params, ddp[0].params);
    INFO("stage " << stage << ": max relative difference ZeRO vs DDP: " << diff);
    CHECK(diff <= 1e-12);
    // Against one process on the whole batch: another summation order, which AdamW can
    // magnify (see test_fsdp.cpp); the DDP equivalence tests' f64 tolerance.
    CHECK(max_relative_difference(zero[0].params, single) <= 1e-10);
    for (int r = 1; r < s.world; ++r) CHECK(bit_identical(zero[r].params, zero[0].params));
    for (const RankResult& rr : zero) {
      CHECK(rr.allreduces_inside_no_sync == 0);              // reduce-scatters, for ZeRO
      CHECK(rr.allreduces_per_step == rr.buckets_per_step);  // one per bucket per step
      check_memory_behaviour(s, rr);
    }
    if (stage == 1) stage1 = zero[0].params;
    if (stage == 2) CHECK(bit_identical(zero[0].params, stage1));
  }
}

}  // namespace

TEST_CASE("ZeRO-1 and -2 equal plain DDP with AdamW: world 1/2/4 x accumulation 1/2 (f64)") {
  for (int world : {1, 2, 4})
    for (int accum : {1, 2}) check_zero_equals_ddp(zero_setup(world, accum));
}

TEST_CASE("ZeRO-1 and -2 clip by the global norm across the shards like clip_grad_norm_") {
  for (int world : {2, 4}) {
    Setup s = zero_setup(world, 2);
    s.clip = 0.05;  // below the gradients' norm: every step clips
    check_zero_equals_ddp(s);
  }
}

TEST_CASE("ZeRO-1 and -2 equal plain DDP on a GPT (f64, AdamW)") {
  Setup s = zero_setup(2, 2);
  s.model = "gpt";
  s.bucket_cap_mb = 4.0 / 1024;
  check_zero_equals_ddp(s);
}

namespace {

// Bytes of the memory report's `categories` while every rank's model and optimizer are alive
// (between two barriers after training, i.e. after a step), over the report before the run.
size_t bytes_of_all_ranks(const Setup& s, std::vector<RankResult>& ranks,
                          std::vector<MemoryCategory> categories) {
  auto bytes = [&] {
    const MemoryCategoryStats now = memory_category_stats(kCPU);
    size_t sum = 0;
    for (MemoryCategory c : categories) sum += now.at(c);
    return sum;
  };
  size_t before = bytes(), during = 0;
  ranks = train_ddp_threads(s, [&](dist::ProcessGroup& group) {
    group.barrier()->wait();
    if (group.rank() == 0) during = bytes();
    group.barrier()->wait();
  });
  return during - before;
}

size_t optimizer_state_bytes_of_all_ranks(const Setup& s, std::vector<RankResult>& ranks) {
  return bytes_of_all_ranks(s, ranks, {MemoryCategory::optimizer_state});
}

}  // namespace

// The ranks are threads of this one process, so the memory report cannot tell them apart:
// it counts the optimizer state of all N ranks together. That sum is honest for a per-rank
// claim because ZeRO's ranks hold equal shares by construction (each bucket is padded to a
// multiple of N and every rank keeps exactly 1/N of it, checked below from shard_numel), so
// one rank's state is the report's sum / N — as DDP's is. The claim: ZeRO per rank is DDP
// per rank / N, up to one bucket of padding and the allocator's block rounding.
TEST_CASE("ZeRO-1 optimizer state per rank is 1/N of DDP's within one bucket (memory report)") {
  for (int world : {2, 4}) {
    INFO("world=" << world);
    Setup s = zero_setup(world, 1);
    s.model = "gpt";  // ~7k parameters in ~20 buckets: one bucket is small against the total
    s.steps = 1;
    std::vector<RankResult> ddp, zero;
    s.zero = 0;
    double ddp_per_rank = double(optimizer_state_bytes_of_all_ranks(s, ddp)) / world;
    s.zero = 1;
    double zero_per_rank = double(optimizer_state_bytes_of_all_ranks(s, zero)) / world;
    for (const RankResult& r : zero) CHECK(r.state_elements == zero[0].state_elements);
    CHECK(zero[0].state_elements * world >= ddp[0].state_elements);
    double one_bucket = 2.0 * double(zero[0].largest_bucket_elements) * sizeof(double);
    INFO("per rank: DDP " << ddp_per_rank << " B, ZeRO " << zero_per_rank << " B, one bucket "
                          << one_bucket << " B");
    CHECK(ddp_per_rank >= 2.0 * double(ddp[0].state_elements) * sizeof(double));
    CHECK(std::abs(zero_per_rank - ddp_per_rank / world) <= one_bucket);
  }
}

// Gradient memory between steps (the report's gradients + buckets, per rank as above): DDP
// and ZeRO-1 keep every .grad and every full bucket (~2x the parameters); ZeRO-2 keeps only
// its shards: DDP's .grad bytes / N, up to one bucket of padding.
TEST_CASE("ZeRO-2 gradient memory per rank is 1/N of DDP's within one bucket (memory report)") {
  const std::vector<MemoryCategory> gradient_memory = {MemoryCategory::gradients,
                                                       MemoryCategory::buckets};
  for (int world : {2, 4}) {
    INFO("world=" << world);
    Setup s = zero_setup(world, 1);
    s.model = "gpt";
    s.steps = 2;
    std::vector<RankResult> ranks;
    double per_rank[3], grads_only[3];
    for (int stage : {0, 1, 2}) {
      s.zero = stage;
      grads_only[stage] = double(bytes_of_all_ranks(s, ranks, {MemoryCategory::gradients})) / world;
      per_rank[stage] = double(bytes_of_all_ranks(s, ranks, gradient_memory)) / world;
    }
    double one_bucket = double(ranks[0].largest_bucket_elements) * sizeof(double);
    MESSAGE("world " << world << ", per rank after a step, gradients + buckets (gradients): DDP "
                     << per_rank[0] << " (" << grads_only[0] << ") B, ZeRO-1 " << per_rank[1]
                     << " (" << grads_only[1] << ") B, ZeRO-2 " << per_rank[2] << " ("
                     << grads_only[2] << ") B");
    CHECK(per_rank[1] >= 2 * grads_only[0] - one_bucket);  // .grad and full buckets
    CHECK(per_rank[2] == grads_only[2]);                   // no full bucket left
    CHECK(std::abs(per_rank[2] - grads_only[0] / world) <= one_bucket);
  }
}

// The check above has teeth: a stage-2 run whose kept shards are wiped before the step (as
// if the optimizer read anything but them) ends far from DDP. Its full buffers are gone by
// then, so the shards are the only copy of the averaged gradient.
TEST_CASE("ZeRO-2 steps from its gradient shards: wiping them breaks the equivalence") {
  Setup s = zero_setup(2, 2);
  std::vector<RankResult> ddp = train_ddp_threads(s);
  s.zero = 2;
  bool full_buffer_seen = false;
  s.before_step = [&](nn::DistributedDataParallel& ddp_rank) {
    const dist::BucketTransport& transport = ddp_rank.reducer().transport();
    for (size_t b = 0; b < transport.bucket_count(); ++b) {
      if (transport.has_buffer(b)) full_buffer_seen = true;
      Tensor shard = transport.shard(b);
      shard.zero_();
    }
  };
  std::vector<RankResult> broken = train_ddp_threads(s);
  CHECK_FALSE(full_buffer_seen);
  CHECK(max_relative_difference(broken[0].params, ddp[0].params) > 1e-3);
}

namespace {
std::shared_ptr<nn::Module> small_mlp() {
  Generator gen{5, 0};
  return std::make_shared<nn::MLP>(std::vector<int64_t>{4, 8, 2}, nn::Activation::relu, true, &gen);
}
dist::Options quick() {
  dist::Options o;
  o.timeout = std::chrono::milliseconds(5000);
  return o;
}
}  // namespace

TEST_CASE("ZeroAdamW needs a zero_stage 1/2 DDP, a synchronised backward, no bucket views") {
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           1,
                           [](dist::ProcessGroup& group) {
                             nn::DistributedDataParallel ddp(small_mlp(), group);
                             optim::ZeroAdamW opt(ddp);
                           },
                           quick()),
                       doctest::Contains("zero_stage 0; construct it with"), Error);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           2,
                           [](dist::ProcessGroup& group) {
                             nn::DDPOptions o;
                             o.zero_stage = 1;
                             nn::DistributedDataParallel ddp(small_mlp(), group, o);
                             optim::ZeroAdamW opt(ddp);
                             opt.step();
                           },
                           quick()),
                       doctest::Contains("no synchronised backward since the last step"), Error);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           1,
                           [](dist::ProcessGroup& group) {
                             nn::DDPOptions o;
                             o.zero_stage = 1;
                             o.gradient_as_bucket_view = true;
                             nn::DistributedDataParallel ddp(small_mlp(), group, o);
                           },
                           quick()),
                       doctest::Contains("zero_stage 1 cannot keep gradients as bucket views"),
                       Error);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           2,
                           [](dist::ProcessGroup& group) {
                             nn::DDPOptions o;
                             o.zero_stage = 3;
                             nn::DistributedDataParallel ddp(small_mlp(), group, o);
                           },
                           quick()),
                       doctest::Contains("zero_stage 3 is not supported (0, 1 or 2)"), Error);
}

namespace {
// A run of 6 steps at world 2 against 3 steps, a sharded checkpoint, and 3 more at world 4
// and at world 1; returns the checkpoint.
std::vector<nn::StateDict> check_resume_at_other_world_sizes(int stage) {
  INFO("stage " << stage);
  Setup whole = zero_setup(2, 2);
  whole.zero = stage;
  whole.steps = 6;
  std::vector<RankResult> uninterrupted = train_ddp_threads(whole);
  Setup first_half = whole;
  first_half.steps = 3;
  std::vector<RankResult> half = train_ddp_threads(first_half);
  std::vector<nn::StateDict> shards;  // the sharded checkpoint: one dict per rank
  for (const RankResult& r : half) shards.push_back(r.optimizer_state);
  for (auto [world, accum] : {std::pair{4, 1}, std::pair{1, 4}}) {
    INFO("resumed at world=" << world << " accum=" << accum);
    Setup second_half = zero_setup(world, accum);
    second_half.zero = stage;
    second_half.first_step = 3;
    second_half.initial_params = half[0].params;
    second_half.optimizer_state = optim::ZeroAdamW::merge_pieces(shards);
    std::vector<RankResult> resumed = train_ddp_threads(second_half);
    double diff = max_relative_difference(resumed[0].params, uninterrupted[0].params);
    INFO("max relative difference to the uninterrupted run: " << diff);
    CHECK(diff <= 1e-12);
    for (int r = 1; r < world; ++r) CHECK(bit_identical(resumed[r].params, resumed[0].params));
  }
  return shards;
}
}  // namespace

// World 2 x accumulation 2, world 4 x 1 and world 1 x 4 see the same global batch of 12
// examples per step, so a run can change world size at a checkpoint and stay the same run.
TEST_CASE("ZeRO-1/-2 resumed from a sharded checkpoint at another world size equal the whole run") {
  check_resume_at_other_world_sizes(2);
  std::vector<nn::StateDict> shards = check_resume_at_other_world_sizes(1);
  Setup missing_rank = zero_setup(1, 4);
  missing_rank.zero = 1;
  missing_rank.first_step = 3;
  missing_rank.optimizer_state = shards[0];  // rank 1's pieces left out
  CHECK_THROWS_WITH_AS(train_ddp_threads(missing_rank),
                       doctest::Contains("a rank's state dict is missing from the merge"), Error);
}
