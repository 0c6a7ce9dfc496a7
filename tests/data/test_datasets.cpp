// CharDataset and TokenBinDataset: vocabulary, windows with next-token targets, file
// formats, and one clear rg::Error for each bad file.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "data/char_dataset.h"
#include "data/token_bin_dataset.h"
#include "temp_dir.h"

using namespace rg::data;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string llmc_header(int32_t magic, int32_t version, int32_t count) {
  std::string h(1024, '\0');
  int32_t* ints = reinterpret_cast<int32_t*>(h.data());
  ints[0] = magic;
  ints[1] = version;
  ints[2] = count;
  return h;
}

}  // namespace

TEST_CASE("char dataset: sorted vocabulary, encode/decode round trip") {
  rg::test::TempDir dir;
  const std::string text = "hello world\nhow are you?\n";
  write_bytes(dir.file("t.txt"), text);
  CharDataset ds(dir.file("t.txt"), 4);
  CHECK(ds.chars() == "\n ?adehloruwy");
  CHECK(ds.vocab_size() == 13);  // \n ' ' ? a d e h l o r u w y
  CHECK(ds.decode(ds.encode(text)) == text);
  CHECK(ds.encode("\n")[0] == 0);
  CHECK_THROWS_AS(ds.encode("Z"), rg::Error);
  CHECK_THROWS_AS(ds.decode({99}), rg::Error);
}

TEST_CASE("char dataset: windows of T with next-token targets") {
  const std::string text = "abcdefghij";  // 10 chars
  auto ds = CharDataset::from_text(text, 3);
  CHECK(ds.size() == 3);  // windows start at 0, 3, 6 (need T+1 = 4 tokens)
  for (int64_t i = 0; i < ds.size(); ++i) {
    Example ex = ds.get(i);
    CHECK(ds.decode(ex.input) == text.substr(3 * i, 3));
    CHECK(ds.decode(ex.target) == text.substr(3 * i + 1, 3));
  }
  auto every = CharDataset::from_text(text, 3, /*stride=*/1);
  CHECK(every.size() == 7);
  CHECK(every.decode(every.get(6).target) == "hij");
  CHECK_THROWS_AS(ds.get(3), rg::Error);
  CHECK_THROWS_AS(ds.get(-1), rg::Error);
}

TEST_CASE("char dataset: missing, empty and too-short files are clear errors") {
  rg::test::TempDir dir;
  CHECK_THROWS_WITH_AS(CharDataset(dir.file("nope.txt"), 4), doctest::Contains("cannot open"),
                       rg::Error);
  write_bytes(dir.file("empty.txt"), "");
  CHECK_THROWS_WITH_AS(CharDataset(dir.file("empty.txt"), 4), doctest::Contains("is empty"),
                       rg::Error);
  write_bytes(dir.file("short.txt"), "abc");
  CHECK_THROWS_WITH_AS(CharDataset(dir.file("short.txt"), 4), doctest::Contains("too few"),
                       rg::Error);
}

TEST_CASE("token bin dataset: llm.c format round trip") {
  rg::test::TempDir dir;
  std::vector<uint16_t> tokens;
  for (int i = 0; i < 101; ++i) tokens.push_back(static_cast<uint16_t>((i * 7919) % 50257));
  write_llmc_tokens(dir.file("t.bin"), tokens);
  TokenBinDataset ds(dir.file("t.bin"), 10);
  CHECK(ds.size() == 10);  // (101 - 11) / 10 + 1
  CHECK(ds.tokens() == tokens);
  Example ex = ds.get(4);
  for (int j = 0; j < 10; ++j) {
    CHECK(ex.input[j] == tokens[40 + j]);
    CHECK(ex.target[j] == tokens[41 + j]);
  }
}

TEST_CASE("token bin dataset: raw uint16 files (nanoGPT) with BinFormat::raw_uint16") {
  rg::test::TempDir dir;
  std::vector<uint16_t> tokens = {5, 6, 7, 8, 9, 10, 11};
  write_bytes(dir.file("raw.bin"),
              std::string(reinterpret_cast<const char*>(tokens.data()), 2 * tokens.size()));
  TokenBinDataset ds(dir.file("raw.bin"), 3, 50257, BinFormat::raw_uint16);
  CHECK(ds.tokens() == tokens);
  CHECK(ds.get(1).input == std::vector<int64_t>{8, 9, 10});
  // The same file read as llm.c format is rejected (too short for the header).
  CHECK_THROWS_AS(TokenBinDataset(dir.file("raw.bin"), 3), rg::Error);
}

TEST_CASE("token bin dataset: each bad file is one clear rg::Error") {
  rg::test::TempDir dir;
  const std::string body(200, '\1');  // 100 tokens of id 257
  auto rejects = [&](const std::string& bytes, const char* needle) {
    write_bytes(dir.file("bad.bin"), bytes);
    CHECK_THROWS_WITH_AS(TokenBinDataset(dir.file("bad.bin"), 8), doctest::Contains(needle),
                         rg::Error);
  };
  CHECK_THROWS_WITH_AS(TokenBinDataset(dir.file("missing.bin"), 8),
                       doctest::Contains("cannot open"), rg::Error);
  rejects("", "is empty");
  rejects(std::string(100, '\0'), "less than llm.c's 1024-byte header");
  rejects(llmc_header(12345, 1, 100) + body, "has magic 12345");
  rejects(llmc_header(kLlmcMagic, 2, 100) + body, "version 2");
  rejects(llmc_header(kLlmcMagic, 1, 101) + body, "header says 101 tokens");
  rejects(llmc_header(kLlmcMagic, 1, 100) + body + "x", "header says 100 tokens");
  rejects(llmc_header(kLlmcMagic, 1, 0), "holds no tokens");
  rejects(llmc_header(kLlmcMagic, 1, 4) + std::string(8, '\0'), "too few");
  write_bytes(dir.file("big.bin"), llmc_header(kLlmcMagic, 1, 100) + body);
  CHECK_THROWS_WITH_AS(TokenBinDataset(dir.file("big.bin"), 8, /*vocab_size=*/100),
                       doctest::Contains("not below the vocabulary size 100"), rg::Error);
}

TEST_CASE("char dataset: train/validation ranges share the whole text's vocabulary") {
  const std::string text = "aaaaaaaaabbbbbbbbbbz";  // 'z' only in the last 10%
  auto train = CharDataset::from_text(text, 4, 1, {0.0, 0.9});
  auto val = CharDataset::from_text(text, 1, 1, {0.9, 1.0});
  CHECK(train.chars() == "abz");
  CHECK(val.chars() == "abz");
  CHECK(train.tokens().size() == 18);
  CHECK(val.decode(val.get(0).input) == "b");
  CHECK(val.decode(val.get(0).target) == "z");
  CHECK_THROWS_AS(CharDataset::from_text(text, 4, 1, {0.5, 0.4}), rg::Error);
  CHECK_THROWS_AS(CharDataset::from_text(text, 4, 1, {0.9, 1.0}), rg::Error);  // 2 chars < 5
}
