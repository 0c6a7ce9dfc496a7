// Helpers shared by the nn tests: relative error between tensors, deterministic token data.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "nn/nn.h"
#include "ringgrad.h"

namespace rg::nn_test {

// max|a - b| / max|b| (0 when both are all zero).
inline double rel_err(const Tensor& a, const Tensor& b) {
  double scale = amax(abs(b.detach().to(DType::f64))).item();
  double diff = max_abs_diff(a.detach().to(DType::f64), b.detach().to(DType::f64));
  return scale > 0 ? diff / scale : diff;
}

// Integer tokens in [0, vocab) of shape `shape`, from a fixed seed.
// The small GPT the nn tests share: 2 layers, 2 heads, width 16, context 8.
inline nn::GPTConfig small_gpt_config(int64_t vocab, uint64_t seed) {
  nn::GPTConfig c;
  c.vocab_size = vocab;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.seed = seed;
  return c;
}

// The memory tests' GPT: `layers` blocks, 4 heads, width 64, vocab and context 64.
inline nn::GPTConfig width64_gpt_config(int64_t layers) {
  nn::GPTConfig c = small_gpt_config(64, 9);
  c.n_layer = layers;
  c.n_embd = 64;
  c.n_head = 4;
  c.block_size = 64;
  return c;
}

inline Tensor random_tokens(const Shape& shape, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> v(numel_of(shape));
  for (auto& x : v) x = static_cast<int64_t>(rng() % static_cast<uint32_t>(vocab));
  return tensor(v, shape);
}

// Copies of `tokens` with every `every`-th entry (from `first`) replaced by ignore_index.
inline Tensor with_ignored(const Tensor& tokens, int64_t ignore_index, int64_t every,
                           int64_t first = 0) {
  std::vector<int64_t> v = tokens.to_vector<int64_t>();
  for (size_t i = first; i < v.size(); i += every) v[i] = ignore_index;
  return tensor(v, tokens.shape());
}

}  // namespace rg::nn_test
