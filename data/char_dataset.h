// CharDataset: character-level language modelling on a text file (Karpathy's
// tiny-shakespeare setup). The vocabulary is the sorted set of distinct bytes of the file
// (a UTF-8 character outside ASCII becomes several tokens); token id = rank in that set.
// Examples are windows of T tokens with next-token targets (see token_stream.h).
// `range` keeps a fraction of the text (e.g. {0, 0.9} to train, {0.9, 1} to validate, as
// nanoGPT's shakespeare_char does) while the vocabulary always comes from the whole text,
// so both parts share token ids.
#pragma once
#include <string>
#include <vector>

#include "data/token_stream.h"

namespace rg::data {

struct TextRange {
  double begin = 0.0, end = 1.0;  // fractions of the text's length
};

class CharDataset : public TokenStreamDataset {
 public:
  // Throws rg::Error when the file is missing, empty or shorter than T+1 characters.
  CharDataset(const std::string& path, int64_t context_length, int64_t stride = 0,
              TextRange range = {});
  // From text in memory (same vocabulary rule).
  static CharDataset from_text(const std::string& text, int64_t context_length, int64_t stride = 0,
                               TextRange range = {});

  const std::string& chars() const { return chars_; }          // id -> character, sorted
  std::vector<int64_t> encode(const std::string& text) const;  // throws on unknown chars
  std::string decode(const std::vector<int64_t>& ids) const;   // throws on bad ids

 private:
  CharDataset(std::string chars, std::vector<uint16_t> tokens, int64_t context_length,
              int64_t stride);
  static CharDataset build(const std::string& text, int64_t context_length, int64_t stride,
                           TextRange range, const std::string& source);
  std::string chars_;
  int16_t id_of_[256];  // -1 for bytes not in the vocabulary
};

}  // namespace rg::data
