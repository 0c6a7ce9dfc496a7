// AdditionDataset: formatting, loss masks on the answer digits only, disjoint splits,
// determinism.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/error.h"
#include "data/addition_dataset.h"

using namespace rg::data;

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

}  // namespace

TEST_CASE("addition: sequence text, lengths and tokens") {
  for (bool reverse : {true, false}) {
    AdditionConfig cfg;
    cfg.digits = 3;
    cfg.size = 50;
    cfg.reverse_answer = reverse;
    AdditionDataset ds(cfg, Split::train);
    CHECK(ds.context_length() == 11);
    CHECK(ds.vocab_size() == 12);
    for (int64_t i = 0; i < ds.size(); ++i) {
      const auto p = ds.problem(i);
      Example ex = ds.get(i);
      REQUIRE(ex.input.size() == 11);
      REQUIRE(ex.target.size() == 11);
      std::vector<int64_t> seq = ex.input;
      seq.push_back(ex.target.back());
      CHECK(ds.decode(seq) == expected_text(ds, p));
    }
  }
  AdditionConfig cfg;
  cfg.digits = 3;
  AdditionDataset ds(cfg, Split::train);
  CHECK(ds.decode(ds.prompt({123, 456})) == "123+456=");
  CHECK(ds.decode(ds.answer({123, 456})) == "9750");
  CHECK(ds.decode(ds.answer({999, 999})) == "8991");
}

TEST_CASE("addition: targets are ignore_index except the answer digits") {
  AdditionConfig cfg;
  cfg.digits = 4;
  cfg.size = 20;
  AdditionDataset ds(cfg, Split::held_out);
  for (int64_t i = 0; i < ds.size(); ++i) {
    Example ex = ds.get(i);
    const auto ans = ds.answer(ds.problem(i));
    int64_t counted = 0;
    for (int64_t j = 0; j < ds.context_length(); ++j) {
      if (j < ds.prompt_length() - 1) {
        CHECK(ex.target[j] == kIgnoreIndex);
      } else {
        CHECK(ex.target[j] == ans[j - (ds.prompt_length() - 1)]);
        ++counted;
      }
    }
    CHECK(counted == 5);
    // The position predicting the first answer digit sees '='.
    CHECK(ex.input[ds.prompt_length() - 1] == AdditionDataset::kEquals);
  }
}

TEST_CASE("addition: train and held-out splits are disjoint and deterministic") {
  AdditionConfig cfg;
  cfg.digits = 2;
  cfg.size = 3000;
  cfg.seed = 7;
  AdditionDataset train(cfg, Split::train), held(cfg, Split::held_out);
  std::set<std::pair<uint64_t, uint64_t>> train_set, held_set;
  for (int64_t i = 0; i < cfg.size; ++i) {
    auto p = train.problem(i);
    CHECK_FALSE(train.is_held_out(p));
    train_set.insert({p.a, p.b});
    auto q = held.problem(i);
    CHECK(held.is_held_out(q));
    held_set.insert({q.a, q.b});
  }
  for (const auto& q : held_set) CHECK(train_set.count(q) == 0);
  CHECK(held_set.size() > 500);  // ~1000 held-out problems of 10^4, drawn 3000 times
  // Deterministic from the seed; a different seed gives a different split.
  AdditionDataset again(cfg, Split::train);
  for (int64_t i = 0; i < 100; ++i) CHECK(again.get(i).input == train.get(i).input);
  cfg.seed = 8;
  AdditionDataset other(cfg, Split::train);
  int same = 0;
  for (int64_t i = 0; i < 100; ++i) same += other.get(i).input == train.get(i).input;
  CHECK(same < 10);
}

TEST_CASE("addition: bad configurations are clear errors") {
  AdditionConfig cfg;
  cfg.digits = 0;
  CHECK_THROWS_AS(AdditionDataset(cfg, Split::train), rg::Error);
  cfg.digits = 10;
  CHECK_THROWS_AS(AdditionDataset(cfg, Split::train), rg::Error);
  cfg.digits = 2;
  cfg.held_out_fraction = 1.0;
  CHECK_THROWS_AS(AdditionDataset(cfg, Split::train), rg::Error);
}
