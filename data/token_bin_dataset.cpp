// llm.c / nanoGPT token files; see token_bin_dataset.h.
#include "data/token_bin_dataset.h"

#include <bit>
#include <cstring>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/read_file.h"

namespace rg::data {
namespace {

static_assert(std::endian::native == std::endian::little, "token files are little-endian");

std::vector<uint16_t> parse_tokens(const std::string& path, const std::string& bytes,
                                   BinFormat format, int64_t vocab_size) {
  const std::string where = "TokenBinDataset: '" + path + "'";
  RG_CHECK(!bytes.empty(), where, " is empty");
  size_t body = 0;
  int64_t count = 0;
  if (format == BinFormat::llmc) {
    const size_t header_bytes = kLlmcHeaderInts * 4;
    RG_CHECK(bytes.size() >= header_bytes, where, " has ", bytes.size(),
             " bytes, less than llm.c's 1024-byte header");
    int32_t header[3];
    std::memcpy(header, bytes.data(), sizeof(header));
    RG_CHECK(header[0] == kLlmcMagic, where, " has magic ", header[0], ", expected ", kLlmcMagic,
             " (llm.c format; use BinFormat::raw_uint16 for headerless files)");
    RG_CHECK(header[1] == 1, where, " has version ", header[1],
             ", only version 1 (uint16 tokens) is supported");
    count = header[2];
    RG_CHECK(count >= 0, where, " has a negative token count ", count);
    const size_t expected = header_bytes + 2 * static_cast<size_t>(count);
    RG_CHECK(bytes.size() == expected, where, " header says ", count, " tokens (", expected,
             " bytes) but the file has ", bytes.size(), " bytes");
    body = header_bytes;
  } else {
    RG_CHECK(bytes.size() % 2 == 0, where, " has an odd size ", bytes.size(), " for uint16 tokens");
    count = static_cast<int64_t>(bytes.size() / 2);
  }
  RG_CHECK(count > 0, where, " holds no tokens");
  std::vector<uint16_t> tokens(count);
  std::memcpy(tokens.data(), bytes.data() + body, 2 * static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    RG_CHECK(tokens[i] < vocab_size, where, ": token ", i, " is ", tokens[i],
             ", not below the vocabulary size ", vocab_size);
  return tokens;
}

}  // namespace

TokenBinDataset::TokenBinDataset(const std::string& path, int64_t context_length,
                                 int64_t vocab_size, BinFormat format, int64_t stride)
    : TokenStreamDataset(parse_tokens(path, read_file(path, "TokenBinDataset"), format, vocab_size),
                         context_length, vocab_size, stride, "TokenBinDataset") {}

void write_llmc_tokens(const std::string& path, const std::vector<uint16_t>& tokens) {
  int32_t header[kLlmcHeaderInts] = {};
  header[0] = kLlmcMagic;
  header[1] = 1;
  header[2] = static_cast<int32_t>(tokens.size());
  AtomicFile out(path);  // its errors name the path and the reason
  out.write(header, sizeof(header));
  out.write(tokens.data(), 2 * tokens.size());
  out.commit();
}

}  // namespace rg::data
