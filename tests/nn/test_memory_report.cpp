// The memory report on real models: a model's parameters are counted exactly, a training
// step puts its bytes under gradients, optimizer state and activations (saved for backward),
// and activation checkpointing cuts the activation peak. The categories always add up to the
// allocator's `allocated`.
#include <doctest/doctest.h>

#include <set>

#include "nn/checkpoint.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {

size_t block_of(size_t nbytes) { return device_interface(DeviceType::cpu).block_bytes(nbytes); }

// The allocator's bytes for the distinct storages of `tensors` (tied weights count once).
size_t block_bytes_of(const std::vector<Tensor>& tensors) {
  std::set<const Storage*> seen;
  size_t sum = 0;
  for (const Tensor& t : tensors)
    if (seen.insert(t.storage().get()).second) sum += block_of(t.storage()->nbytes);
  return sum;
}

MemoryCategoryStats categories() {
  AllocatorStats s = memory_stats(kCPU);
  CHECK(s.categories.total == s.allocated);  // every check point: the sum is the allocator's
  return s.categories;
}

size_t grown(MemoryCategory c, const MemoryCategoryStats& before) {
  return categories().at(c) - before.at(c);
}

}  // namespace

TEST_CASE("memory report: a parameter-only model reports its parameter bytes exactly") {
  const MemoryCategoryStats before = categories();
  Linear linear(48, 80);
  CHECK(grown(MemoryCategory::parameters, before) == block_of(48 * 80 * 4) + block_of(80 * 4));
  CHECK(categories().total - before.total == block_bytes_of(linear.parameters()));
  GPT gpt(nn_test::width64_gpt_config(2));
  CHECK(grown(MemoryCategory::parameters, before) ==
        block_bytes_of(linear.parameters()) + block_bytes_of(gpt.parameters()));
  CHECK(categories().at(MemoryCategory::gradients) == before.at(MemoryCategory::gradients));
}

TEST_CASE("memory report: a training step's gradients, optimizer state and activations") {
  GPT gpt(nn_test::width64_gpt_config(2));
  optim::AdamW opt(gpt.parameters());
  const size_t param_bytes = block_bytes_of(gpt.parameters());
  Tensor idx = nn_test::random_tokens({4, 64}, 64, 1),
         targets = nn_test::random_tokens({4, 64}, 64, 2);
  CHECK(categories().at(MemoryCategory::buffers) >= 2 * block_of(64 * 64));  // causal masks
  const MemoryCategoryStats before = categories();
  Tensor loss = gpt.forward(idx, targets).second;
  const size_t saved = grown(MemoryCategory::activations, before);
  CHECK(saved > 0);
  loss.backward();
  CHECK(grown(MemoryCategory::gradients, before) == param_bytes);
  loss = Tensor();  // its graph (the last saved tensors) goes with it
  // Left: the inputs that the embedding and the loss saved, which the caller still holds.
  CHECK(grown(MemoryCategory::activations, before) == block_of(4 * 64 * 8) * 2);
  opt.step();
  CHECK(grown(MemoryCategory::optimizer_state, before) == 2 * param_bytes);  // AdamW's moments
  MESSAGE("GPT 2x64, batch 4x64: parameters ", param_bytes, " B, activations saved ", saved, " B");
}

// With L blocks, plain training keeps every block's activations until backward; checkpointing
// keeps each block's input (and a little bookkeeping) and one block's recomputed activations
// at a time. The "(L-1)/L of the block activations" counts a block's input among its
// activations, which checkpointing must keep: the fall is (L-1) blocks less the L inputs.
TEST_CASE("memory report: checkpointing keeps one block's activations at a time") {
  const int layers = 6;
  Tensor idx = nn_test::random_tokens({8, 64}, 64, 1),
         targets = nn_test::random_tokens({8, 64}, 64, 2);
  auto activation_peak = [&](int n_layer, bool checkpointed) {
    GPT model(nn_test::width64_gpt_config(n_layer));
    model.checkpoint_activations = checkpointed;
    reset_peak_memory_stats(kCPU);
    const size_t start = categories().at(MemoryCategory::activations);
    model.forward(idx, targets).second.backward();
    return categories().peak_of(MemoryCategory::activations) - start;
  };
  const size_t plain = activation_peak(layers, false);
  const size_t per_block = plain - activation_peak(layers - 1, false);
  const size_t outside_blocks = plain - layers * per_block;
  const size_t checkpointed = activation_peak(layers, true);
  const size_t kept_per_block = checkpointed - activation_peak(layers - 1, true);
  const size_t block_input = block_of(8 * 64 * 64 * 4);
  MESSAGE("activation peak: plain ", plain, " B, checkpointed ", checkpointed,
          " B; per block: ", per_block, " B plain, ", kept_per_block, " B checkpointed; fall ",
          100.0 * double(plain - checkpointed) / double(layers * per_block),
          "% of the blocks' activations");
  CHECK(kept_per_block <= block_input + block_input / 8);  // its input, little else
  CHECK(per_block > 12 * kept_per_block);  // a plain block saves ~17 times its input
  // One block recomputed at a time: two at once would add another per_block.
  CHECK(checkpointed <= outside_blocks + per_block + layers * kept_per_block + block_input);
}
