// A tiny GPT learns to copy a short sequence on the CPU within seconds.
#include <doctest/doctest.h>

#include <random>

#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {
// Sequences "a b c d SEP a b c d" over digits 0..7 (SEP = 8); inputs are all but the last
// token, targets the next tokens, counted only after SEP (the copy), others ignored.
std::pair<Tensor, Tensor> copy_batch(std::mt19937& rng, int64_t batch, int64_t n) {
  const int64_t T = 2 * n;
  std::vector<int64_t> x(batch * T), y(batch * T, -1);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> seq(2 * n + 1);
    for (int64_t i = 0; i < n; ++i) seq[i] = seq[n + 1 + i] = rng() % 8;
    seq[n] = 8;
    for (int64_t t = 0; t < T; ++t) {
      x[b * T + t] = seq[t];
      if (t >= n) y[b * T + t] = seq[t + 1];
    }
  }
  return {tensor(x, {batch, T}), tensor(y, {batch, T})};
}
}  // namespace

TEST_CASE("a tiny GPT learns to copy: loss falls below half its start") {
  GPTConfig c;
  c.vocab_size = 9;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.seed = 1;
  auto model = std::make_shared<GPT>(c);
  optim::AdamW opt(model->parameters(), {.lr = 3e-3, .weight_decay = 0.0});
  std::mt19937 rng(123);
  auto [x0, y0] = copy_batch(rng, 64, 4);
  const double start = model->forward(x0, y0, Reduction::mean, -1).second.item();
  double end = start;
  int steps = 0;
  for (; steps < 300 && end > 0.4 * start; ++steps) {
    auto [x, y] = copy_batch(rng, 32, 4);
    opt.zero_grad();
    auto [logits, loss] = model->forward(x, y, Reduction::mean, -1);
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    if (steps % 10 == 9) {
      NoGradGuard no_grad;
      end = model->forward(x0, y0, Reduction::mean, -1).second.item();
    }
  }
  MESSAGE("copy task loss: start ", start, ", end ", end, " after ", steps, " steps");
  CHECK(start == doctest::Approx(std::log(9.0)).epsilon(0.15));
  CHECK(end < 0.5 * start);
}
