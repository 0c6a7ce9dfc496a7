// Which parameters weight decay applies to. PyTorch's optimizers decay every parameter they
// are given; nanoGPT's configure_optimizers decays every tensor with >= 2 dimensions
// (Linear weights and embeddings) and none of the 1-D ones (biases, LayerNorm weights).
// NoDecay names the kinds to leave undecayed; its defaults are nanoGPT's:
//   biases      parameters named "bias" (any module)
//   norms       LayerNorm parameters (weight and bias)
//   embeddings  Embedding tables (GPT's wte, wpe; a tied lm_head.weight is wte)
// Everything else (Linear weights) always decays.
#pragma once
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace rg::optim {

struct NoDecay {
  bool biases = true, norms = true, embeddings = false;
};

// "biases,norms" (nanoGPT), "biases,norms,embeddings", "none" (decay all, as PyTorch) ...:
// a comma-separated list of the kinds above. An unknown word is an rg::Error naming it.
NoDecay parse_no_decay(const std::string& list);
std::string to_string(const NoDecay& skip);  // the list parse_no_decay reads back

// Two groups over model.parameters(), in their order: [0] decays (the optimizer's weight
// decay), [1] is the NoDecay kinds (weight decay 0).
std::vector<ParamGroup> decay_groups(const nn::Module& model, const NoDecay& skip);

}  // namespace rg::optim
