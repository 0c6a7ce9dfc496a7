// Dataset: random access to training examples of token ids. An example is a window of T
// input tokens and the T tokens that follow each of them (next-token targets); a target of
// kIgnoreIndex (-100, cross_entropy's default ignore_index) is left out of the loss.
// get() must be safe to call from several threads at once (the DataLoader's worker calls
// it while the training thread may call it too), so datasets are immutable after
// construction.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rg::data {

inline constexpr int64_t kIgnoreIndex = -100;

struct Example {
  std::vector<int64_t> input;   // [T] token ids
  std::vector<int64_t> target;  // [T] next-token ids, or kIgnoreIndex
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  virtual int64_t context_length() const = 0;  // T of every example
  virtual int64_t vocab_size() const = 0;
};

// Throws rg::Error naming `who` unless 0 <= index < size.
void check_index(const char* who, int64_t index, int64_t size);

}  // namespace rg::data
