// rg::nn::load_gpt2: a GPT from a HuggingFace GPT-2-layout safetensors file (the
// `model.safetensors` of `gpt2`, `gpt2-medium`, ... or any file in that layout).
//
// The layout, and what the loader does with it:
//   wte.weight [V,C], wpe.weight [T,C], ln_f.{weight,bias}, h.{i}.ln_1/ln_2.{weight,bias},
//   h.{i}.attn.c_attn.{weight [C,3C], bias}, h.{i}.attn.c_proj.{weight [C,C], bias},
//   h.{i}.mlp.c_fc.{weight [C,4C], bias}, h.{i}.mlp.c_proj.{weight [4C,C], bias}
//   - names may carry a "transformer." prefix (GPT2LMHeadModel); they map to ringgrad's
//     (nanoGPT's) names, "transformer." + name;
//   - the weights of HF's Conv1D layers (c_attn, c_proj, c_fc) are stored [in, out]: they are
//     transposed into Linear's [out, in];
//   - h.{i}.attn.bias and h.{i}.attn.masked_bias (causal-mask buffers) are ignored;
//   - lm_head.weight, when present, must equal wte.weight (it is tied).
// The config comes from the shapes: n_layer (the h.{i} count), n_embd and vocab_size (wte),
// block_size (wpe), bias (ln_f.bias present). n_head, which no shape tells, comes from the
// argument or the file's "n_head" metadata (see nn/gpt_metadata.h); when both are given they
// must agree. gelu_approximate is "tanh" (HF's gelu_new), dropout 0.
// Every error is one rg::Error naming the file.
#pragma once
#include <memory>
#include <string>

#include "nn/gpt.h"
#include "nn/safetensors.h"

namespace rg::nn {

// n_head 0: from the file's metadata (an error when it has none).
std::shared_ptr<GPT> load_gpt2(const std::string& path, int64_t n_head = 0);
// The same on a file already read; `source` names it in errors.
std::shared_ptr<GPT> gpt2_from_safetensors(const SafetensorsContents& file, int64_t n_head,
                                           const std::string& source);

}  // namespace rg::nn
