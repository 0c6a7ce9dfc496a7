// GPT files: shape metadata (written and checked) and HuggingFace GPT-2-layout loading.
#include <doctest/doctest.h>

#include "../data/temp_dir.h"
#include "nn/gpt2_loader.h"
#include "nn/gpt_metadata.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {
GPTConfig small_config() { return rg::nn_test::small_gpt_config(13, 7); }

// `model`'s weights in HuggingFace's GPT-2 layout: names without "transformer." (or with it,
// `prefixed`), Conv1D weights stored [in, out], the attention mask buffers HF writes, and
// no lm_head.weight (tied).
NamedTensors hf_layout(const GPT& model, bool prefixed) {
  NamedTensors out;
  for (const auto& [name, t] : model.state_dict()) {
    if (name == "lm_head.weight") continue;
    std::string hf = prefixed ? name : name.substr(std::string("transformer.").size());
    const bool conv1d = name.find(".c_attn.weight") != std::string::npos ||
                        name.find(".c_proj.weight") != std::string::npos ||
                        name.find(".c_fc.weight") != std::string::npos;
    out.emplace_back(hf, conv1d ? t.detach().t().contiguous() : t.detach());
    if (name.find(".attn.c_proj.bias") != std::string::npos) {  // after a block's attention
      const std::string block = hf.substr(0, hf.find(".attn.") + 6);
      const int64_t T = model.config().block_size;
      out.emplace_back(block + "bias", tril_mask(T, T).to(DType::f32).reshape({1, 1, T, T}));
      out.emplace_back(block + "masked_bias", scalar_tensor(-1e4));
    }
  }
  return out;
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

TEST_CASE("load_gpt2 reads HF GPT-2-layout files: names mapped, Conv1D weights transposed") {
  GPTConfig c = small_config();
  c.gelu_approximate = "tanh";  // HF gpt2's gelu_new
  auto reference = std::make_shared<GPT>(c);
  reference->eval();
  const Tensor idx = nn_test::random_tokens({2, 8}, c.vocab_size, 3);
  const Tensor expected = reference->forward(idx);
  rg::test::TempDir dir;

  save_safetensors(dir.file("plain.safetensors"), hf_layout(*reference, false), {{"format", "pt"}});
  auto plain = load_gpt2(dir.file("plain.safetensors"), 2);
  const GPTConfig& got = plain->config();
  CHECK(got.n_layer == 2);
  CHECK(got.n_head == 2);
  CHECK(got.n_embd == 16);
  CHECK(got.vocab_size == 13);
  CHECK(got.block_size == 8);
  CHECK(got.gelu_approximate == "tanh");
  plain->eval();
  CHECK(equal(plain->forward(idx), expected));
  CHECK(equal(plain->h[1]->attn->c_attn->weight, reference->h[1]->attn->c_attn->weight));

  // "transformer." prefix, n_head from the metadata
  save_safetensors(dir.file("prefixed.safetensors"), hf_layout(*reference, true),
                   {{"n_head", "2"}});
  auto prefixed = load_gpt2(dir.file("prefixed.safetensors"));
  prefixed->eval();
  CHECK(equal(prefixed->forward(idx), expected));

  CHECK_THROWS_WITH_AS(load_gpt2(dir.file("plain.safetensors")),
                       doctest::Contains("plain.safetensors: the number of attention heads is "
                                         "not in the file's metadata"),
                       Error);
  CHECK_THROWS_WITH_AS(load_gpt2(dir.file("prefixed.safetensors"), 4),
                       doctest::Contains("n_head is 2 in the file, 4 in the model"), Error);
  // ringgrad's own [out, in] layout is not HF's: the square c_proj would load silently, but
  // c_attn [3C, C] does not fit once transposed.
  NamedTensors ours;
  for (const auto& [name, t] : reference->state_dict()) ours.emplace_back(name, t.detach());
  save_safetensors(dir.file("ours.safetensors"), ours);
  CHECK_THROWS_WITH_AS(load_gpt2(dir.file("ours.safetensors"), 2),
                       doctest::Contains("mis-shaped keys: transformer.h.0.attn.c_attn.weight"),
                       Error);
}
