// Activation checkpointing (nn/checkpoint.h): the same gradients bit for bit on the cpu, the
// same dropout masks, inputs without grad left alone, and less memory held between forward
// and backward.
#include <doctest/doctest.h>

#include "nn/checkpoint.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {

// Loss and every parameter's gradient after one forward/backward of `model` on a batch.
std::pair<Tensor, std::vector<Tensor>> loss_and_grads(GPT& model, uint32_t seed) {
  Tensor idx = nn_test::random_tokens({3, 8}, 11, seed);
  Tensor targets = nn_test::random_tokens({3, 8}, 11, seed + 1);
  for (auto& p : model.parameters()) p.set_grad(Tensor());
  Tensor loss = model.forward(idx, targets).second;
  loss.backward();
  std::vector<Tensor> grads;
  for (auto& p : model.parameters()) grads.push_back(p.grad().clone());
  return {loss.detach(), grads};
}

}  // namespace

TEST_CASE(
    "checkpointed GPT blocks give the same loss and gradients, bit for bit, dropout included") {
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype);
    GPTConfig c = nn_test::small_gpt_config(11, 5);
    c.dropout = 0.2;
    GPT plain(c), checkpointed(c);
    plain.to(dtype);
    checkpointed.to(dtype);
    checkpointed.checkpoint_activations = true;
    for (uint32_t step = 0; step < 2; ++step) {  // the second step draws fresh dropout masks
      auto [plain_loss, plain_grads] = loss_and_grads(plain, 40 + step);
      auto [ckpt_loss, ckpt_grads] = loss_and_grads(checkpointed, 40 + step);
      CHECK(equal(plain_loss, ckpt_loss));
      REQUIRE(plain_grads.size() == ckpt_grads.size());
      for (size_t i = 0; i < plain_grads.size(); ++i) {
        CAPTURE(i);
        CHECK(equal(plain_grads[i], ckpt_grads[i]));
      }
    }
    // the recomputation replayed the dropout generators, then put them back
    auto a = dropout_generators(plain), b = dropout_generators(checkpointed);
    REQUIRE(a.size() == b.size());
    REQUIRE(a.size() == 3 * 2 + 1);  // per block: attention, residual, mlp; plus the embedding's
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i]->offset == b[i]->offset);
  }
}

TEST_CASE("checkpoint of a function: input gradients as without it; inputs without grad get none") {
  Tensor x = randn({4, 5}, DType::f64).requires_grad_(true);
  Tensor w = randn({5, 3}, DType::f64).requires_grad_(true);  // captured, not an input
  Tensor c = randn({4, 5}, DType::f64);                       // an input without grad
  CheckpointFn fn = [&](const std::vector<Tensor>& in) {
    return add(sum(mul(sin(add(in[0], in[1])), in[0])), sum(matmul(in[0], w)));
  };
  Tensor expected = fn({x, c});
  expected.backward();
  Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.set_grad(Tensor());
  w.set_grad(Tensor());
  Tensor out = checkpoint(fn, {x, c});
  CHECK(out.requires_grad());
  CHECK(equal(out.detach(), expected.detach()));
  out.backward();
  CHECK(equal(x.grad(), gx));
  CHECK(equal(w.grad(), gw));
  CHECK_FALSE(c.grad().defined());
  // with grad mode off it just runs
  NoGradGuard no_grad;
  CHECK_FALSE(checkpoint(fn, {x, c}).requires_grad());
}

TEST_CASE("checkpoint: an input written in place before backward is a named error") {
  Tensor x = randn({3}, DType::f64).requires_grad_(true);
  Tensor y = mul(x, 2.0);  // a non-leaf input
  Tensor out = checkpoint([](const std::vector<Tensor>& in) { return sum(exp(in[0])); }, {y});
  {
    NoGradGuard no_grad;  // as an optimizer would
    y.add_(ones_like(y));
  }
  CHECK_THROWS_WITH_AS(out.backward(), doctest::Contains("checkpoint"), Error);
}

// Peak bytes are monotonic (no reset), so the checkpointed step runs first: the peak after it
// bounds its own from above, and the plain step's new, higher peak is exactly its own.
TEST_CASE("checkpointing keeps only the blocks' inputs: the activation peak falls") {
  GPTConfig c = nn_test::width64_gpt_config(6);
  GPT plain(c), checkpointed(c);
  checkpointed.checkpoint_activations = true;
  Tensor idx = nn_test::random_tokens({8, 64}, 64, 1),
         targets = nn_test::random_tokens({8, 64}, 64, 2);
  auto step_peak = [&](GPT& model) {
    Tensor loss = model.forward(idx, targets).second;
    loss.backward();
    return memory_stats(kCPU).peak_allocated;
  };
  size_t before = memory_stats(kCPU).allocated;
  size_t ckpt_peak = step_peak(checkpointed) - before;
  size_t plain_peak = step_peak(plain) - before;
  MESSAGE("activation peak above the models: plain ", plain_peak, " B, checkpointed ", ckpt_peak,
          " B");
  CHECK(ckpt_peak * 2 < plain_peak);
}
