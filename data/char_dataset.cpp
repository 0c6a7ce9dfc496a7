// Character vocabulary and windows over a text; see char_dataset.h.
#include "data/char_dataset.h"

#include <algorithm>

#include "core/error.h"
#include "data/read_file.h"

namespace rg::data {

CharDataset::CharDataset(std::string chars, std::vector<uint16_t> tokens, int64_t context_length,
                         int64_t stride)
    : TokenStreamDataset(std::move(tokens), context_length, static_cast<int64_t>(chars.size()),
                         stride, "CharDataset"),
      chars_(std::move(chars)) {
  std::fill(std::begin(id_of_), std::end(id_of_), int16_t{-1});
  for (size_t i = 0; i < chars_.size(); ++i)
    id_of_[static_cast<unsigned char>(chars_[i])] = static_cast<int16_t>(i);
}

CharDataset CharDataset::build(const std::string& text, int64_t context_length, int64_t stride,
                               TextRange range, const std::string& source) {
  RG_CHECK(!text.empty(), "CharDataset: ", source, " is empty");
  RG_CHECK(0 <= range.begin && range.begin < range.end && range.end <= 1, "CharDataset: range [",
           range.begin, ", ", range.end, ") is not a sub-range of [0, 1]");
  bool present[256] = {};
  for (unsigned char c : text) present[c] = true;
  std::string chars;
  uint16_t id_of[256] = {};
  for (int c = 0; c < 256; ++c) {
    if (!present[c]) continue;
    id_of[c] = static_cast<uint16_t>(chars.size());
    chars.push_back(static_cast<char>(c));
  }
  const double n = static_cast<double>(text.size());
  const size_t begin = static_cast<size_t>(range.begin * n),
               end = static_cast<size_t>(range.end * n);
  RG_CHECK(static_cast<int64_t>(end - begin) >= context_length + 1, "CharDataset: ", source,
           " has ", end - begin, " characters in range [", range.begin, ", ", range.end,
           "), too few for one window of ", context_length, "+1");
  std::vector<uint16_t> tokens(end - begin);
  for (size_t i = begin; i < end; ++i)
    tokens[i - begin] = id_of[static_cast<unsigned char>(text[i])];
  return CharDataset(std::move(chars), std::move(tokens), context_length, stride);
}

CharDataset::CharDataset(const std::string& path, int64_t context_length, int64_t stride,
                         TextRange range)
    : CharDataset(
          build(read_file(path, "CharDataset"), context_length, stride, range, "'" + path + "'")) {}

CharDataset CharDataset::from_text(const std::string& text, int64_t context_length, int64_t stride,
                                   TextRange range) {
  return build(text, context_length, stride, range, "the text");
}

std::vector<int64_t> CharDataset::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) {
    RG_CHECK(id_of_[c] >= 0, "CharDataset::encode: character code ", int(c),
             " is not in the vocabulary");
    ids.push_back(id_of_[c]);
  }
  return ids;
}

std::string CharDataset::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int64_t id : ids) {
    RG_CHECK(id >= 0 && id < static_cast<int64_t>(chars_.size()), "CharDataset::decode: id ", id,
             " out of range for a vocabulary of ", chars_.size());
    text.push_back(chars_[id]);
  }
  return text;
}

}  // namespace rg::data
