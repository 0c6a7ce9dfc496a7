// GPT files: shape metadata (written and checked) and HuggingFace GPT-2-layout loading.
#include <doctest/doctest.h>

#include "nn/gpt_metadata.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {
GPTConfig small_config() {
  GPTConfig c;
  c.vocab_size = 13;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.seed = 7;
  return c;
}
}  // namespace

TEST_CASE("gpt_metadata round-trips; a differing field is an error naming it and both values") {
  GPTConfig c = small_config();
  SafetensorsMetadata md = gpt_metadata(c);
  CHECK(md.at("n_head") == "2");
  CHECK(md.at("n_layer") == "2");
  CHECK(md.at("n_embd") == "16");
  CHECK(md.at("vocab_size") == "13");
  CHECK(md.at("block_size") == "8");
  CHECK_NOTHROW(check_gpt_metadata(md, c, "a.safetensors"));
  CHECK_NOTHROW(check_gpt_metadata({{"format", "pt"}}, c, "hf.safetensors"));  // no fields
  GPTConfig eight = c;
  eight.n_head = 8;
  CHECK_THROWS_WITH_AS(check_gpt_metadata(md, eight, "a.safetensors"),
                       "a.safetensors: the file's metadata does not match the model: n_head is "
                       "2 in the file, 8 in the model",
                       Error);
  auto bad = metadata_mismatches({{"n_head", "4"}, {"block_size", "8"}}, gpt_metadata(eight));
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].field == "n_head");
  CHECK(bad[0].in_file == "4");
  CHECK(bad[0].expected == "8");
}
