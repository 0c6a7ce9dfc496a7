// The judge is judged first: the plain reference's hand-derived gradients (gpt_reference.h)
// agree with central finite differences of its own loss, so an exactness failure points at
// ringgrad, not at the reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "gpt_reference.h"

using namespace rg::exactness;

namespace {

RefParams random_params(const RefConfig& c, uint32_t seed) {
  RefParams p = zero_params(c);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.5);
  for (auto& [name, values] : named(p))
    for (double& v : *values) v = normal(rng);
  for (RefLayer& l : p.layers)  // LayerNorm weights around 1, as trained ones are
    for (Vec* w : {&l.ln1_w, &l.ln2_w})
      for (double& v : *w) v += 1.0;
  return p;
}

std::vector<int64_t> tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out(n);
  for (int64_t& t : out) t = static_cast<int64_t>(rng() % static_cast<uint32_t>(vocab));
  return out;
}

}  // namespace

TEST_CASE("the reference's backward matches finite differences of its forward") {
  const RefConfig c{
      .vocab = 7, .block = 5, .layers = 2, .heads = 2, .embd = 6, .batch = 2, .seq = 4};
  RefParams p = random_params(c, 11);
  const std::vector<int64_t> idx = tokens(c.batch * c.seq, c.vocab, 12);
  const std::vector<int64_t> targets = tokens(c.batch * c.seq, c.vocab, 13);
  RefParams grads = reference_backward(c, p, reference_forward(c, p, idx, targets), idx, targets);
  auto named_grads = named(grads);
  auto named_params = named(p);
  const double h = 1e-5;
  for (size_t t = 0; t < named_params.size(); ++t) {
    Vec& values = *named_params[t].second;
    const Vec& g = *named_grads[t].second;
    double scale = 0;
    for (double v : g) scale = std::max(scale, std::abs(v));
    const size_t n = values.size();
    for (size_t k = 0; k < 5; ++k) {
      const size_t i = k * (n - 1) / 4;
      const double saved = values[i];
      values[i] = saved + h;
      const double up = reference_forward(c, p, idx, targets).loss;
      values[i] = saved - h;
      const double down = reference_forward(c, p, idx, targets).loss;
      values[i] = saved;
      const double numeric = (up - down) / (2 * h);
      CHECK_MESSAGE(
          std::abs(numeric - g[i]) <= 1e-7 * scale + 1e-9,
          named_params[t].first << "[" << i << "]: analytic " << g[i] << ", numeric " << numeric);
    }
  }
}
