// AdditionDataset: the default task, generated in code. Each example is a sum of two
// d-digit numbers (zero-padded, fixed width) written as tokens:
//   a(d digits) '+' b(d digits) '=' c(d+1 digits)        e.g. d=3: 123+456=0579
// Tokens: 0-9 are the digits, 10 is '+', 11 is '=' (vocabulary 12; no pad or end token
// is needed because every sequence has the same length 3d+3). With reverse_answer (the
// default) c is written least-significant digit first (123+456=9750), so a small
// transformer can produce each digit after the carry that decides it.
// Example: input = sequence[0, 3d+2), target = sequence[1, 3d+3) with every target set to
// kIgnoreIndex except the d+1 answer digits, so the loss counts only the answer.
// Splits: problem (a, b) belongs to the held-out split when a Philox hash of (seed, a, b)
// falls below held_out_fraction, so train and held-out never share a problem. Example i of
// a split is drawn from that split's problems by (seed, split, i): deterministic and random
// access; problems may repeat within a split when `size` approaches the split's count.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"

namespace rg::data {

enum class Split { train, held_out };

struct AdditionConfig {
  int64_t digits = 3;    // d, 1..9
  int64_t size = 10000;  // examples in each split's dataset
  double held_out_fraction = 0.1;
  uint64_t seed = 0;
  bool reverse_answer = true;
};

class AdditionDataset : public Dataset {
 public:
  static constexpr int64_t kPlus = 10, kEquals = 11, kVocabSize = 12;
  struct Problem {
    uint64_t a, b;
  };

  AdditionDataset(AdditionConfig config, Split split);

  int64_t size() const override { return config_.size; }
  Example get(int64_t index) const override;
  int64_t context_length() const override { return 3 * config_.digits + 2; }
  int64_t vocab_size() const override { return kVocabSize; }

  const AdditionConfig& config() const { return config_; }
  Split split() const { return split_; }
  Problem problem(int64_t index) const;
  bool is_held_out(const Problem& p) const;
  int64_t prompt_length() const { return 2 * config_.digits + 2; }  // "a+b="
  int64_t answer_length() const { return config_.digits + 1; }
  std::vector<int64_t> prompt(const Problem& p) const;
  std::vector<int64_t> answer(const Problem& p) const;           // as written (reversed or not)
  std::string decode(const std::vector<int64_t>& tokens) const;  // "123+456=9750"

 private:
  AdditionConfig config_;
  Split split_;
  uint64_t operand_count_;  // 10^d
};

}  // namespace rg::data
