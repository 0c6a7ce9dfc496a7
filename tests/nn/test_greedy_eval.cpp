// Greedy decoding and exact-match accuracy on the addition task, against an oracle "model".
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "nn/greedy_eval.h"
#include "ops/ops.h"

using namespace rg::nn;
using rg::data::AdditionConfig;
using rg::data::Split;

namespace {

// Sum from an example's tokens: "a+b=" then c (reversed when configured).
std::string expected_text(const AdditionDataset& ds, const AdditionDataset::Problem& p) {
  const int d = static_cast<int>(ds.config().digits);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%0*llu+%0*llu=", d, static_cast<unsigned long long>(p.a), d,
                static_cast<unsigned long long>(p.b));
  std::string c(d + 1, '0');
  unsigned long long sum = p.a + p.b;
  for (int i = d; i >= 0; --i, sum /= 10) c[i] = static_cast<char>('0' + sum % 10);
  if (ds.config().reverse_answer) std::reverse(c.begin(), c.end());
  return buf + c;
}

// A "model" that knows the answers: logits [B,t,V] with a 1 at the correct next token
// (or at `wrong` for rows whose a is odd, to test partial accuracy).
LogitsFn oracle(const AdditionDataset& ds, bool break_odd) {
  return [&ds, break_odd](const rg::Tensor& idx) {
    const int64_t B = idx.size(0), t = idx.size(1), V = AdditionDataset::kVocabSize;
    std::vector<int64_t> tokens = idx.to_vector<int64_t>();
    std::vector<double> logits(B * t * V, 0.0);
    const int64_t d = ds.config().digits;
    for (int64_t b = 0; b < B; ++b) {
      uint64_t a = 0, c = 0;
      for (int64_t k = 0; k < d; ++k) a = a * 10 + tokens[b * t + k];
      for (int64_t k = 0; k < d; ++k) c = c * 10 + tokens[b * t + d + 1 + k];
      AdditionDataset::Problem p{a, c};
      std::vector<int64_t> ans = ds.answer(p);
      const int64_t pos = t - ds.prompt_length();  // answer digits already written
      int64_t next = ans[pos];
      if (break_odd && a % 2 == 1 && pos == 0) next = (next + 1) % 10;
      logits[(b * t + t - 1) * V + next] = 1.0;
    }
    return rg::tensor(logits, {B, t, V});
  };
}

}  // namespace

TEST_CASE("greedy_eval: addition exact-match accuracy with batched decoding") {
  AdditionConfig cfg;
  cfg.digits = 3;
  cfg.size = 300;
  AdditionDataset ds(cfg, Split::held_out);
  CHECK(exact_match_accuracy(ds, oracle(ds, false), 64) == 1.0);
  int64_t even = 0;
  for (int64_t i = 0; i < 100; ++i) even += ds.problem(i).a % 2 == 0;
  CHECK(exact_match_accuracy(ds, oracle(ds, true), 32, 100) == doctest::Approx(even / 100.0));
  const auto seqs = greedy_complete(ds, oracle(ds, false), {0, 1, 2});
  REQUIRE(seqs.size() == 3);
  for (int k = 0; k < 3; ++k) CHECK(ds.decode(seqs[k]) == expected_text(ds, ds.problem(k)));
  // A model with the wrong output shape is named in the error.
  LogitsFn flat = [](const rg::Tensor& idx) { return rg::zeros({idx.size(0), 12}); };
  CHECK_THROWS_WITH_AS(exact_match_accuracy(ds, flat), doctest::Contains("greedy_complete"),
                       rg::Error);
}
