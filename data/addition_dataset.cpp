// Addition problems and their split; see addition_dataset.h.
#include "data/addition_dataset.h"

#include <algorithm>

#include "core/error.h"
#include "core/philox.h"

namespace rg::data {
namespace {

uint64_t random_u64(uint64_t key, uint64_t counter) {
  PhiloxOutput r = philox4x32_10(key, counter);
  return static_cast<uint64_t>(r.v[0]) | (static_cast<uint64_t>(r.v[1]) << 32);
}

// Distinct Philox keys for the split hash and for each split's draws.
uint64_t split_key(uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 0x5EED; }
uint64_t draw_key(uint64_t seed, Split split, uint64_t attempt) {
  return seed * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull * (2 * attempt + 1) +
         static_cast<uint64_t>(split);
}

void write_digits(std::vector<int64_t>& out, uint64_t value, int64_t width) {
  const size_t end = out.size() + width;
  out.resize(end);
  for (int64_t i = 1; i <= width; ++i, value /= 10) out[end - i] = static_cast<int64_t>(value % 10);
}

}  // namespace

AdditionDataset::AdditionDataset(AdditionConfig config, Split split)
    : config_(config), split_(split), operand_count_(1) {
  RG_CHECK(config.digits >= 1 && config.digits <= 9,
           "AdditionDataset: digits must be in 1..9, got ", config.digits);
  RG_CHECK(config.size > 0, "AdditionDataset: size must be positive, got ", config.size);
  RG_CHECK(config.held_out_fraction > 0 && config.held_out_fraction < 1,
           "AdditionDataset: held_out_fraction must be in (0, 1), got ", config.held_out_fraction);
  for (int64_t i = 0; i < config.digits; ++i) operand_count_ *= 10;
}

bool AdditionDataset::is_held_out(const Problem& p) const {
  const uint64_t id = p.a * operand_count_ + p.b;
  const double u = static_cast<double>(random_u64(split_key(config_.seed), id) >> 11) * 0x1p-53;
  return u < config_.held_out_fraction;
}

AdditionDataset::Problem AdditionDataset::problem(int64_t index) const {
  check_index("AdditionDataset::problem", index, config_.size);
  const uint64_t space = operand_count_ * operand_count_;
  for (uint64_t attempt = 0; attempt < 100000; ++attempt) {
    const uint64_t id = random_u64(draw_key(config_.seed, split_, attempt), index) % space;
    Problem p{id / operand_count_, id % operand_count_};
    if (is_held_out(p) == (split_ == Split::held_out)) return p;
  }
  RG_FAIL("AdditionDataset: found no problem of this split for example ", index,
          " (held_out_fraction ", config_.held_out_fraction, " too extreme for ", config_.digits,
          " digits)");
}

std::vector<int64_t> AdditionDataset::prompt(const Problem& p) const {
  std::vector<int64_t> out;
  out.reserve(3 * config_.digits + 3);
  write_digits(out, p.a, config_.digits);
  out.push_back(kPlus);
  write_digits(out, p.b, config_.digits);
  out.push_back(kEquals);
  return out;
}

std::vector<int64_t> AdditionDataset::answer(const Problem& p) const {
  std::vector<int64_t> out;
  write_digits(out, p.a + p.b, answer_length());
  if (config_.reverse_answer) std::reverse(out.begin(), out.end());
  return out;
}

Example AdditionDataset::get(int64_t index) const {
  check_index("AdditionDataset::get", index, config_.size);
  const Problem p = problem(index);
  std::vector<int64_t> seq = prompt(p);
  const std::vector<int64_t> ans = answer(p);
  seq.insert(seq.end(), ans.begin(), ans.end());
  const int64_t T = context_length();
  Example ex;
  ex.input.assign(seq.begin(), seq.begin() + T);
  ex.target.assign(T, kIgnoreIndex);
  // target[j] predicts seq[j+1]; the answer occupies seq[prompt_length(), T].
  for (int64_t j = prompt_length() - 1; j < T; ++j) ex.target[j] = seq[j + 1];
  return ex;
}

std::string AdditionDataset::decode(const std::vector<int64_t>& tokens) const {
  std::string text;
  for (int64_t t : tokens) {
    if (t >= 0 && t <= 9)
      text.push_back(static_cast<char>('0' + t));
    else if (t == kPlus)
      text.push_back('+');
    else if (t == kEquals)
      text.push_back('=');
    else
      text.push_back('?');
  }
  return text;
}

}  // namespace rg::data
