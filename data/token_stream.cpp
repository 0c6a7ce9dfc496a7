// Windows over a token stream; see token_stream.h.
#include "data/token_stream.h"

#include "core/error.h"

namespace rg::data {

void check_index(const char* who, int64_t index, int64_t size) {
  RG_CHECK(index >= 0 && index < size, who, ": index ", index, " out of range for ", size,
           " examples");
}

TokenStreamDataset::TokenStreamDataset(std::vector<uint16_t> tokens, int64_t context_length,
                                       int64_t vocab_size, int64_t stride, const char* who)
    : tokens_(std::move(tokens)),
      context_length_(context_length),
      vocab_size_(vocab_size),
      stride_(stride > 0 ? stride : context_length) {
  RG_CHECK(context_length > 0, who, ": context length must be positive, got ", context_length);
  const int64_t n = static_cast<int64_t>(tokens_.size());
  RG_CHECK(n >= context_length + 1, who, ": ", n, " tokens are too few for one window of ",
           context_length, "+1 tokens");
  size_ = (n - context_length - 1) / stride_ + 1;
}

Example TokenStreamDataset::get(int64_t index) const {
  check_index("TokenStreamDataset::get", index, size_);
  const int64_t start = index * stride_;
  Example ex;
  ex.input.assign(tokens_.begin() + start, tokens_.begin() + start + context_length_);
  ex.target.assign(tokens_.begin() + start + 1, tokens_.begin() + start + context_length_ + 1);
  return ex;
}

}  // namespace rg::data
