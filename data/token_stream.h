// TokenStreamDataset: a long stream of token ids cut into windows of T+1 tokens; window i
// starts at i * stride, its input is tokens [start, start+T) and its target is
// tokens [start+1, start+T+1). stride = T (the default) gives non-overlapping windows, as
// llm.c's loader reads them; stride = 1 gives every window. Tokens are kept as uint16
// (GPT-2's 50257 ids and byte-level characters both fit), so a 1e9-token file takes 2 GB.
#pragma once
#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace rg::data {

class TokenStreamDataset : public Dataset {
 public:
  // stride <= 0 means stride = context_length.
  TokenStreamDataset(std::vector<uint16_t> tokens, int64_t context_length, int64_t vocab_size,
                     int64_t stride = 0, const char* who = "TokenStreamDataset");

  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  int64_t context_length() const override { return context_length_; }
  int64_t vocab_size() const override { return vocab_size_; }
  const std::vector<uint16_t>& tokens() const { return tokens_; }

 private:
  std::vector<uint16_t> tokens_;
  int64_t context_length_;
  int64_t vocab_size_;
  int64_t stride_;
  int64_t size_;
};

}  // namespace rg::data
