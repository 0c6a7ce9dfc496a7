// ZeRO stage 3 (nn::FullyShardedDataParallel with optim::FsdpAdamW), as tests: the same GPT
// as plain DDP with AdamW after 3 steps for world 1/2/4 x accumulation 1/2 (f64, relative
// difference <= 1e-12), with global-norm clipping and without resharding after forward;
// bit-identical ranks; with activation checkpointing; a Block's parameters freed after its
// forward (kept without reshard_after_forward), no .grad and no gathered unit after a step;
// prefetching; per-rank parameter, gradient and optimizer bytes 1/N of DDP's per the memory
// report; resuming from sharded optimizer state at another world size; and the errors of a
// wrong set-up.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <tuple>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "core/memory_accounting.h"
#include "dist/threads_group.h"
#include "equivalence.h"
#include "nn/fsdp.h"
#include "nn/gpt.h"
#include "nn/optim/fsdp_adamw.h"
#include "nn/optim/zero_adamw.h"

using namespace rg;
using namespace rg::testing;

namespace {

constexpr int64_t kIgnore = -100;  // equivalence.cpp's ignored target

Setup fsdp_setup(int world, int accum) {
  Setup s;
  s.model = "gpt";
  s.world = world;
  s.accum = accum;
  s.optimizer = "adamw";
  return s;
}

struct FsdpRankResult {
  std::vector<Tensor> params;  // gathered after training, in registration order
  int64_t state_elements = 0;
  // After each forward (before its backward): Block units still gathered, and parameters
  // whose storage holds memory.
  int64_t most_blocks_gathered_after_forward = 0;
  int64_t fewest_blocks_gathered_after_forward = -1;
  int64_t most_grads_after_step = 0;
  int64_t most_units_gathered_after_step = 0;
  int64_t prefetched_gathers = 0;
  nn::StateDict optimizer_state;    // FsdpAdamW's state_dict after training (copies)
  std::vector<Tensor> grad_shards;  // the units' averaged gradient shards of the last step
  // Block gradients seen by a post-accumulate hook (after FSDP's) in synchronised backwards:
  // as views of a larger (flat) buffer, or owning their storage.
  int64_t block_grads_in_flat_buffer = 0, block_grads_alone = 0;
};

// Counts into `result` how the last parameter of the first block (among the first to get its
// gradient in backward, so not yet handed to the reduce-scatter) holds its gradient.
void watch_block_gradient(nn::FullyShardedDataParallel& fsdp, FsdpRankResult& result) {
  const Tensor& p = fsdp.params()[fsdp.units()[1].params.back()];
  register_post_accumulate_grad_hook(p, [&fsdp, &result](const Tensor& param) {
    if (!fsdp.require_sync() || !param.grad().defined()) return;
    const size_t own = size_t(param.numel()) * itemsize(param.dtype());
    (param.grad().storage()->nbytes > own ? result.block_grads_in_flat_buffer
                                          : result.block_grads_alone) += 1;
  });
}

int64_t blocks_gathered(const nn::FullyShardedDataParallel& fsdp) {
  int64_t n = 0;
  for (size_t u = 1; u < fsdp.units().size(); ++u) {
    bool gathered = fsdp.units()[u].gathered;
    for (size_t i : fsdp.units()[u].params)
      CHECK((fsdp.params()[i].storage()->data != nullptr) == gathered);
    n += gathered;
  }
  return n;
}

FsdpRankResult train_fsdp_rank(const Setup& s, dist::ProcessGroup& group, nn::FSDPOptions options,
                               const std::function<void(dist::ProcessGroup&)>& at_end) {
  const int rank = group.rank();
  auto model = make_model(s, 100 + uint64_t(rank) * 7);  // FSDP must broadcast rank 0's
  if (s.checkpoint) std::dynamic_pointer_cast<nn::GPT>(model)->checkpoint_activations = true;
  if (!s.initial_params.empty()) {  // resuming: weights before the wrap, which shards them
    NoGradGuard no_grad;
    std::vector<Tensor> params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].detach().copy_(s.initial_params[i]);
  }
  nn::FullyShardedDataParallel fsdp(model, group, options);
  optim::FsdpAdamW opt(fsdp, adamw_options());
  if (!s.optimizer_state.empty()) opt.load_state_dict(s.optimizer_state);
  FsdpRankResult result;
  watch_block_gradient(fsdp, result);
  for (int step = s.first_step; step < s.first_step + s.steps; ++step) {
    auto [x, y] = random_batch(s, int64_t(s.world) * s.accum * s.micro, 1000 + uint64_t(step));
    const double denominator = counted(y) / s.world;
    const int64_t per_rank = int64_t(s.accum) * s.micro;
    opt.zero_grad();
    for (int k = 0; k < s.accum; ++k) {
      const int64_t start = rank * per_rank + k * s.micro;
      Tensor xm = x.narrow(0, start, s.micro), ym = y.narrow(0, start, s.micro);
      auto guard = k + 1 == s.accum ? nn::FsdpNoSyncGuard() : fsdp.no_sync();
      Tensor logits = fsdp.forward(xm);
      const int64_t gathered = blocks_gathered(fsdp);
      result.most_blocks_gathered_after_forward =
          std::max(result.most_blocks_gathered_after_forward, gathered);
      if (result.fewest_blocks_gathered_after_forward < 0 ||
          gathered < result.fewest_blocks_gathered_after_forward)
        result.fewest_blocks_gathered_after_forward = gathered;
      Tensor loss = cross_entropy(logits.reshape({-1, logits.size(-1)}), ym.reshape({-1}),
                                  Reduction::sum, kIgnore);
      div(loss, scalar_tensor(denominator, loss.dtype())).backward();
    }
    if (s.clip > 0) opt.clip_grad_norm_(s.clip);
    opt.step();
    int64_t grads = 0, units = 0;
    for (const Tensor& p : fsdp.params()) grads += p.grad().defined();
    for (const nn::FsdpUnit& unit : fsdp.units()) units += unit.gathered;
    result.most_grads_after_step = std::max(result.most_grads_after_step, grads);
    result.most_units_gathered_after_step = std::max(result.most_units_gathered_after_step, units);
  }
  result.state_elements = opt.shard_numel();
  result.prefetched_gathers = int64_t(fsdp.prefetched_gathers());
  for (const nn::FsdpUnit& unit : fsdp.units())
    result.grad_shards.push_back(unit.grad_shard.clone());
  for (const auto& [name, tensor] : opt.state_dict())
    result.optimizer_state.insert(name, tensor.detach().clone());
  if (at_end) at_end(group);
  fsdp.gather_full_parameters();
  for (const Tensor& p : model->parameters()) result.params.push_back(p.detach().clone());
  fsdp.reshard();
  return result;
}

std::vector<FsdpRankResult> train_fsdp_threads(
    const Setup& s, nn::FSDPOptions options = {},
    const std::function<void(dist::ProcessGroup&)>& at_end = {}) {
  std::vector<FsdpRankResult> results(s.world);
  dist::Options o;
  o.timeout = std::chrono::milliseconds(20000);
  dist::run_threads(
      s.world,
      [&](dist::ProcessGroup& group) {
        results[group.rank()] = train_fsdp_rank(s, group, options, at_end);
      },
      o);
  return results;
}

void check_fsdp_equals_ddp(const Setup& s, nn::FSDPOptions options = {}) {
  std::ostringstream what;
  what << "world=" << s.world << " accum=" << s.accum << " clip=" << s.clip
       << " checkpoint=" << s.checkpoint
       << " reshard_after_forward=" << options.reshard_after_forward
       << " prefetch=" << options.prefetch;
  INFO(what.str());
  std::vector<RankResult> ddp = train_ddp_threads(s);
  const std::vector<Tensor> single = train_single_process(s);
  std::vector<FsdpRankResult> fsdp = train_fsdp_threads(s, options);
  const double diff = max_relative_difference(fsdp[0].params, ddp[0].params);
  MESSAGE(what.str() << ": max relative difference ZeRO-3 vs DDP: " << diff);
  CHECK(diff <= 1e-12);
  // One process on the whole batch sums its gradients in another order (one mean over the
  // batch, not the ranks' means averaged), and AdamW's division by sqrt(v) + eps magnifies
  // that rounding where a gradient is near zero: the DDP equivalence tests' f64 tolerance
  // (test_equivalence.cpp). 1.1e-12 was seen with the portable build's avx2 kernels.
  CHECK(max_relative_difference(fsdp[0].params, single) <= 1e-10);
  for (int r = 1; r < s.world; ++r) CHECK(bit_identical(fsdp[r].params, fsdp[0].params));
  for (const FsdpRankResult& rr : fsdp) {
    CHECK(rr.most_grads_after_step == 0);
    CHECK(rr.most_units_gathered_after_step == 0);
  }
}

}  // namespace

TEST_CASE("ZeRO-3 equals plain DDP with AdamW on a GPT: world 1/2/4 x accumulation 1/2 (f64)") {
  for (int world : {1, 2, 4})
    for (int accum : {1, 2}) check_fsdp_equals_ddp(fsdp_setup(world, accum));
}

TEST_CASE("ZeRO-3 clips by the global norm across the shards like clip_grad_norm_") {
  for (int world : {2, 4}) {
    Setup s = fsdp_setup(world, 2);
    s.clip = 0.05;  // below the gradients' norm: every step clips
    check_fsdp_equals_ddp(s);
  }
}

// The checkpointed forward runs each block without a graph (gathered, then freed); backward
// recomputes it, whose forward pre-hook gathers the block again and keeps it for the block's
// backward right after.
TEST_CASE("ZeRO-3 composes with activation checkpointing: recomputation re-gathers") {
  for (int world : {2, 4}) {
    Setup s = fsdp_setup(world, 2);
    s.checkpoint = true;
    check_fsdp_equals_ddp(s);
  }
}

TEST_CASE("ZeRO-3 without resharding after forward equals DDP too") {
  nn::FSDPOptions keep;
  keep.reshard_after_forward = false;
  check_fsdp_equals_ddp(fsdp_setup(2, 2), keep);
}

// Each forward issues the second block's all-gather as the first starts, and each backward
// the first block's as the second starts its backward (then both were resharded); without
// resharding the backward finds them gathered. Prefetching changes no bit.
TEST_CASE("ZeRO-3 prefetches the next block's all-gather in forward and backward") {
  Setup s = fsdp_setup(2, 2);
  nn::FSDPOptions off;
  off.prefetch = false;
  std::vector<FsdpRankResult> plain = train_fsdp_threads(s, off);
  std::vector<FsdpRankResult> ahead = train_fsdp_threads(s);
  nn::FSDPOptions keep;
  keep.reshard_after_forward = false;
  std::vector<FsdpRankResult> kept = train_fsdp_threads(s, keep);
  const int64_t forwards = int64_t(s.steps) * s.accum;
  for (int r = 0; r < s.world; ++r) {
    CHECK(plain[r].prefetched_gathers == 0);
    CHECK(ahead[r].prefetched_gathers == 2 * forwards);
    CHECK(kept[r].prefetched_gathers == forwards);
    CHECK(bit_identical(ahead[r].params, plain[r].params));
  }
  check_fsdp_equals_ddp(fsdp_setup(4, 1), off);
}

// Without accumulation each block's .grad are views of its flat gradient buffer (no copy);
// after no_sync micro-batches the accumulated .grad are copied into one.
TEST_CASE("ZeRO-3 accumulates a synchronised block's gradients in its flat buffer") {
  for (int accum : {1, 2}) {
    Setup s = fsdp_setup(2, accum);
    for (const FsdpRankResult& r : train_fsdp_threads(s)) {
      CHECK(r.block_grads_in_flat_buffer == (accum == 1 ? s.steps : 0));
      CHECK(r.block_grads_alone == (accum == 1 ? 0 : s.steps));
    }
  }
}

// f32 weights, gradients reduce-scattered as bf16: the averaged gradient shards of one step
// are within bf16's rounding of the f32 reduction's (8 bits: ~4e-3 of each tensor's largest
// element per rounding, two roundings), not equal to them.
TEST_CASE("ZeRO-3 reduce-scatters in bf16 when asked, close to f32") {
  Setup s = fsdp_setup(2, 1);
  s.dtype = DType::f32;
  s.steps = 1;
  std::vector<FsdpRankResult> full = train_fsdp_threads(s);
  nn::FSDPOptions bf16;
  bf16.reduce_dtype = DType::bf16;
  std::vector<FsdpRankResult> half = train_fsdp_threads(s, bf16);
  for (int r = 0; r < s.world; ++r) {
    const double diff = max_relative_difference(half[r].grad_shards, full[r].grad_shards);
    MESSAGE("rank " << r << ": bf16 reduce-scatter vs f32, gradient shards differ by " << diff);
    CHECK(diff > 0);
    CHECK(diff <= 1e-2);
  }
  CHECK(bit_identical(half[1].params, half[0].params));
}

TEST_CASE("ZeRO-3 frees a Block's full parameters after its forward unless told to keep them") {
  Setup s = fsdp_setup(2, 2);
  s.steps = 1;
  std::vector<FsdpRankResult> resharded = train_fsdp_threads(s);
  nn::FSDPOptions keep;
  keep.reshard_after_forward = false;
  std::vector<FsdpRankResult> kept = train_fsdp_threads(s, keep);
  const int64_t blocks = 2;  // equivalence.cpp's GPT has 2 layers
  for (int r = 0; r < s.world; ++r) {
    CHECK(resharded[r].most_blocks_gathered_after_forward == 0);
    CHECK(kept[r].fewest_blocks_gathered_after_forward == blocks);
  }
}

namespace {
// Bytes of parameters + gradients (DDP's .grad may view its buckets: those too) + optimizer
// state of all ranks while their models and optimizers are alive after training (between
// two barriers), over the report before.
size_t persistent_bytes_of_all_ranks(
    const std::function<void(const std::function<void(dist::ProcessGroup&)>&)>& run) {
  auto bytes = [] {
    const MemoryCategoryStats now = memory_category_stats(kCPU);
    return now.at(MemoryCategory::parameters) + now.at(MemoryCategory::gradients) +
           now.at(MemoryCategory::buckets) + now.at(MemoryCategory::optimizer_state);
  };
  size_t before = bytes(), during = 0;
  run([&](dist::ProcessGroup& group) {
    group.barrier()->wait();
    if (group.rank() == 0) during = bytes();
    group.barrier()->wait();
  });
  return during - before;
}
}  // namespace

// Thread ranks share one memory report, so it counts all N ranks together; ZeRO-3's ranks
// hold equal shards by construction (every unit padded to a multiple of N), so one rank's
// bytes are the sum / N, as DDP's are. The claim: ZeRO-3 per rank is DDP per rank / N, up
// to the units' padding and the allocator's rounding of each block: 4 shards (parameters,
// gradients, two moments) of 1/N of the model each.
TEST_CASE("ZeRO-3 parameter, gradient and optimizer bytes per rank are 1/N of DDP's") {
  for (int world : {2, 4}) {
    INFO("world=" << world);
    Setup s = fsdp_setup(world, 1);
    s.steps = 1;
    const double ddp = double(persistent_bytes_of_all_ranks(
                           [&](const auto& at_end) { train_ddp_threads(s, at_end); })) /
                       world;
    std::vector<FsdpRankResult> ranks;
    const double fsdp = double(persistent_bytes_of_all_ranks([&](const auto& at_end) {
                          ranks = train_fsdp_threads(s, {}, at_end);
                        })) /
                        world;
    MESSAGE("world " << world << ", per rank after a step, parameters + gradients + optimizer "
                     << "state: DDP " << ddp << " B, ZeRO-3 " << fsdp << " B (ratio " << fsdp / ddp
                     << ")");
    double model_elements = 0;
    for (const Tensor& p : ranks[0].params) model_elements += double(p.numel());
    const double elements = double(ranks[0].state_elements);  // padded shard, per rank
    CHECK(elements * world >= model_elements);
    CHECK(ddp >= 4 * model_elements * sizeof(double));
    CHECK(fsdp >= 4 * elements * sizeof(double));  // shard, gradient shard, two moments
    CHECK(fsdp <= 1.05 * 4 * elements * sizeof(double));
    CHECK(fsdp <= ddp / world);
  }
}

namespace {
dist::Options quick() {
  dist::Options o;
  o.timeout = std::chrono::milliseconds(5000);
  return o;
}
}  // namespace

TEST_CASE("ZeRO-3 refuses a step without synchronised backward and a parameter it lacks") {
  const Setup s = fsdp_setup(1, 1);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           2,
                           [&](dist::ProcessGroup& group) {
                             nn::FullyShardedDataParallel fsdp(make_model(s, 1), group);
                             optim::FsdpAdamW opt(fsdp);
                             opt.step();
                           },
                           quick()),
                       doctest::Contains("no synchronised backward since the last step"), Error);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           1,
                           [&](dist::ProcessGroup& group) {
                             nn::FullyShardedDataParallel fsdp(make_model(s, 1), group);
                             optim::FsdpAdamW opt(fsdp, {optim::ParamGroup{{ones({2})}, {}}});
                           },
                           quick()),
                       doctest::Contains("is not one the FullyShardedDataParallel shards"), Error);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           1,
                           [&](dist::ProcessGroup& group) {
                             auto model = make_model(s, 1);
                             model->to(DType::bf16);
                             nn::FullyShardedDataParallel fsdp(model, group);
                           },
                           quick()),
                       doctest::Contains("has dtype bfloat16; the shards take float32 or float64"),
                       Error);
  CHECK_THROWS_WITH_AS(dist::run_threads(
                           2,
                           [&](dist::ProcessGroup& group) {
                             nn::DDPOptions o;
                             o.zero_stage = 3;
                             nn::DistributedDataParallel ddp(make_model(s, 1), group, o);
                           },
                           quick()),
                       doctest::Contains("stage 3 is nn::FullyShardedDataParallel"), Error);
}

namespace {
std::vector<nn::StateDict> states_of(const std::vector<FsdpRankResult>& ranks) {
  std::vector<nn::StateDict> shards;
  for (const FsdpRankResult& r : ranks) shards.push_back(r.optimizer_state);
  return shards;
}
}  // namespace

// World 2 x accumulation 2, world 4 x 1 and world 1 x 4 see the same global batch per step:
// 3 steps at world 2, a sharded checkpoint (each rank's pieces), then 3 more at world 4 and
// at world 1 equal 6 uninterrupted steps; and the pieces of a ZeRO-2 run resume at ZeRO-3
// (the same format: parameter index and element offset).
TEST_CASE("ZeRO-3 resumed from a sharded checkpoint at another world size equals the whole run") {
  Setup whole = fsdp_setup(2, 2);
  whole.steps = 6;
  std::vector<FsdpRankResult> uninterrupted = train_fsdp_threads(whole);
  Setup first_half = whole;
  first_half.steps = 3;
  std::vector<FsdpRankResult> half = train_fsdp_threads(first_half);
  first_half.zero = 2;
  std::vector<RankResult> half_zero2 = train_ddp_threads(first_half);
  std::vector<nn::StateDict> zero2_shards;
  for (const RankResult& r : half_zero2) zero2_shards.push_back(r.optimizer_state);
  for (auto [world, accum, from_zero2] :
       {std::tuple{4, 1, false}, std::tuple{1, 4, false}, std::tuple{4, 1, true}}) {
    INFO("resumed at world=" << world << " accum=" << accum << " from ZeRO-2: " << from_zero2);
    Setup second_half = fsdp_setup(world, accum);
    second_half.first_step = 3;
    second_half.initial_params = from_zero2 ? half_zero2[0].params : half[0].params;
    second_half.optimizer_state =
        optim::ZeroAdamW::merge_pieces(from_zero2 ? zero2_shards : states_of(half));
    std::vector<FsdpRankResult> resumed = train_fsdp_threads(second_half);
    const double diff = max_relative_difference(resumed[0].params, uninterrupted[0].params);
    const std::string from = from_zero2 ? " from ZeRO-2" : "";
    MESSAGE("resumed at world " << world << from
                                << ": max relative difference to the uninterrupted run " << diff);
    CHECK(diff <= 1e-12);
    for (int r = 1; r < world; ++r) CHECK(bit_identical(resumed[r].params, resumed[0].params));
  }
  Setup missing_rank = fsdp_setup(1, 4);
  missing_rank.first_step = 3;
  missing_rank.initial_params = half[0].params;
  missing_rank.optimizer_state = half[0].optimizer_state;  // rank 1's pieces left out
  CHECK_THROWS_WITH_AS(train_fsdp_threads(missing_rank),
                       doctest::Contains("a rank's state dict is missing from the merge"), Error);
}
