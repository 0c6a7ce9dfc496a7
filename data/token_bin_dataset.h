// TokenBinDataset: pre-tokenised text in a .bin file, as written by llm.c's
// dev/data/*.py (e.g. tinyshakespeare, fineweb GPT-2 shards):
//   header: 256 little-endian int32; [0] = 20240520 (magic), [1] = 1 (version: uint16
//           GPT-2 tokens), [2] = number of tokens; the rest is zero
//   body:   that many little-endian uint16 token ids (file size = 1024 + 2 * count)
// BinFormat::raw_uint16 reads nanoGPT's prepare.py output instead: the whole file is
// uint16 ids, no header. llm.c's version 2 (uint32 LLaMA-3 tokens) is rejected.
// Examples are windows of T tokens with next-token targets (see token_stream.h).
#pragma once
#include <string>

#include "data/token_stream.h"

namespace rg::data {

enum class BinFormat { llmc, raw_uint16 };

inline constexpr int32_t kLlmcMagic = 20240520;
inline constexpr int64_t kLlmcHeaderInts = 256;

class TokenBinDataset : public TokenStreamDataset {
 public:
  // vocab_size: ids must be below it (GPT-2: 50257); checked once at load.
  // Throws one rg::Error for a missing/empty/truncated file, a bad magic or version, a count
  // that disagrees with the file size, or an id >= vocab_size.
  TokenBinDataset(const std::string& path, int64_t context_length, int64_t vocab_size = 50257,
                  BinFormat format = BinFormat::llmc, int64_t stride = 0);
};

// Writes tokens in llm.c's format (for tests and small tools; not atomic).
void write_llmc_tokens(const std::string& path, const std::vector<uint16_t>& tokens);

}  // namespace rg::data
