// bf16 autocast (ops/autocast.h): each policy row gives the dtype it says, backward runs with
// autocast off and hands f32 parameters f32 gradients, a GPT's loss and gradients stay close to
// f32, checkpointing recomputes under the forward's autocast state (bit for bit), and the
// activations saved for backward shrink towards half.
#include <doctest/doctest.h>

#include <string>

#include "nn/checkpoint.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {

Tensor randn_of(const Shape& shape, uint64_t seed, DType dtype = DType::f32) {
  Generator gen{seed, 0};
  return randn(shape, dtype, kCPU, &gen);
}

// Loss and every parameter's gradient after one forward (under autocast when `bf16`) and a
// backward of `model` on a fixed batch.
std::pair<Tensor, std::vector<Tensor>> loss_and_grads(GPT& model, bool bf16, int64_t batch = 3) {
  const int64_t T = model.config().block_size, V = model.config().vocab_size;
  Tensor idx = nn_test::random_tokens({batch, T}, V, 7);
  Tensor targets = nn_test::random_tokens({batch, T}, V, 8);
  model.zero_grad();
  Tensor loss;
  {
    AutocastGuard autocast(DType::bf16, bf16);
    loss = model.forward(idx, targets).second;
  }
  loss.backward();
  std::vector<Tensor> grads;
  for (auto& p : model.parameters()) grads.push_back(p.grad().clone());
  return {loss.detach(), grads};
}

}  // namespace

TEST_CASE("autocast: each policy row gives its dtype; other ops promote; f64 is left alone") {
  Tensor a = randn_of({4, 8}, 1), w = randn_of({3, 8}, 2), bias = randn_of({3}, 3);
  Tensor ln_w = ones({8}), ln_b = zeros({8});
  Tensor tokens = tensor(std::vector<int64_t>{0, 2, 1, 2}, {4});
  AutocastGuard autocast;
  CHECK(AutocastMode::is_enabled());
  Tensor h = matmul(a, w.t());
  CHECK(h.dtype() == DType::bf16);                           // lower
  CHECK(linear(a, w, bias).dtype() == DType::bf16);          // lower, the bias too
  CHECK(gelu(h, "tanh").dtype() == DType::bf16);             // not listed: its input's dtype
  CHECK(add(h, randn_of({4, 3}, 4)).dtype() == DType::f32);  // not listed: promoted
  CHECK(softmax(h, -1).dtype() == DType::bf16);              // compute_float32
  CHECK(softmax(a, -1).dtype() == DType::f32);
  CHECK(log_softmax(h, -1).dtype() == DType::f32);  // float32
  CHECK(layer_norm(matmul(a, ones({8, 8})), {8}, ln_w, ln_b).dtype() == DType::f32);
  CHECK(cross_entropy(h, tokens).dtype() == DType::f32);
  CHECK(sum(h).dtype() == DType::f32);
  CHECK(mean(h, {1}).dtype() == DType::f32);
  Tensor d = randn_of({4, 8}, 5, DType::f64);
  CHECK(matmul(d, d.t()).dtype() == DType::f64);  // autocast only trades f32 for bf16
  CHECK(autocast_policy(AutocastOp::matmul) == AutocastPolicy::lower);
  CHECK(std::string(autocast_op_name(AutocastOp::layer_norm)) == "layer_norm");
  {
    AutocastOffGuard off;
    CHECK(matmul(a, w.t()).dtype() == DType::f32);
  }
  CHECK(AutocastMode::is_enabled());  // the inner guard restored it
}

TEST_CASE("autocast: only bf16 is a lower dtype; the error names it") {
  try {
    AutocastGuard bad(DType::f64);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("bfloat16") != std::string::npos);
    CHECK(std::string(e.what()).find("float64") != std::string::npos);
  }
  CHECK_FALSE(AutocastMode::is_enabled());
}

TEST_CASE("autocast: backward runs with autocast off; f32 leaves get f32 gradients near f32's") {
  Tensor x = randn_of({16, 32}, 11), w = randn_of({24, 32}, 12).requires_grad_(true);
  Tensor b = randn_of({24}, 13).requires_grad_(true);
  auto grads_of = [&](bool bf16, bool* autocast_in_backward) {
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    Tensor loss;
    {
      AutocastGuard autocast(DType::bf16, bf16);
      Tensor h = linear(x, w, b);
      register_hook(h, [autocast_in_backward](const Tensor& g) {
        *autocast_in_backward = AutocastMode::is_enabled();
        return g;
      });
      loss = sum(mul(gelu(h, "tanh"), gelu(h, "tanh")));
    }
    AutocastGuard still_on;  // backward turns it off even when the caller has it on
    loss.backward();
    return std::pair{w.grad().clone(), b.grad().clone()};
  };
  bool seen = true;
  auto [w32, b32] = grads_of(false, &seen);
  auto [w16, b16] = grads_of(true, &seen);
  CHECK_FALSE(seen);
  CHECK(w16.dtype() == DType::f32);
  CHECK(b16.dtype() == DType::f32);
  CHECK(nn_test::rel_err(w16, w32) < 3e-2);  // bf16 has an 8-bit mantissa
  CHECK(nn_test::rel_err(b16, b32) < 3e-2);
  CHECK(nn_test::rel_err(w16, w32) > 0);  // and it did compute in bf16
}

TEST_CASE("autocast GPT: loss and gradients near f32; checkpointing recomputes in bf16 exactly") {
  GPTConfig c = nn_test::small_gpt_config(11, 5);
  GPT model(c), checkpointed(c);
  checkpointed.checkpoint_activations = true;
  auto [loss32, grads32] = loss_and_grads(model, false);
  auto [loss16, grads16] = loss_and_grads(model, true);
  CHECK(loss16.dtype() == DType::f32);
  CHECK(std::abs(loss16.item() - loss32.item()) < 1e-2 * std::abs(loss32.item()));
  CHECK(std::abs(loss16.item() - loss32.item()) > 0);
  for (size_t i = 0; i < grads32.size(); ++i) {
    CAPTURE(i);
    CHECK(grads16[i].dtype() == DType::f32);
    CHECK(nn_test::rel_err(grads16[i], grads32[i]) < 6e-2);
  }
  auto [loss_ckpt, grads_ckpt] = loss_and_grads(checkpointed, true);
  CHECK(equal(loss_ckpt, loss16));
  for (size_t i = 0; i < grads16.size(); ++i) CHECK(equal(grads_ckpt[i], grads16[i]));
}

TEST_CASE("autocast GPT: the activations saved for backward shrink towards half") {
  GPT gpt(nn_test::width64_gpt_config(2));
  auto saved_by_forward = [&](bool bf16, int64_t batch) {
    Tensor idx = nn_test::random_tokens({batch, 64}, 64, 1);
    Tensor targets = nn_test::random_tokens({batch, 64}, 64, 2);
    const size_t before = memory_stats(kCPU).categories.at(MemoryCategory::activations);
    AutocastGuard autocast(DType::bf16, bf16);
    Tensor loss = gpt.forward(idx, targets).second;
    return double(memory_stats(kCPU).categories.at(MemoryCategory::activations) - before);
  };
  // Per example (the difference of two batch sizes): the bf16 copies of the weights that the
  // matmuls save do not grow with the batch.
  const double f32 = saved_by_forward(false, 8) - saved_by_forward(false, 4);
  const double bf16 = saved_by_forward(true, 8) - saved_by_forward(true, 4);
  MESSAGE("activations saved per 4 examples of 64 tokens: f32 ", f32, " B, bf16 ", bf16,
          " B, ratio ", bf16 / f32);
  CHECK(bf16 < 0.6 * f32);
  CHECK(bf16 > 0.45 * f32);
}
