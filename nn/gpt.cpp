// GPT (see nn/gpt.h): module tree, nanoGPT init and forward.
#include "nn/gpt.h"

#include <cmath>
#include <string>
#include <unordered_set>

#include "nn/init.h"

namespace rg::nn {
namespace {
// Seeds of the dropout generators: distinct per layer, derived from the config's seed.
uint64_t dropout_seed(const GPTConfig& config, uint64_t slot) {
  return (config.seed ^ 0xD1B54A32D192ED03ull) + 4 * slot;
}
}  // namespace

FeedForward::FeedForward(const GPTConfig& c, uint64_t seed, Generator* gen)
    : Module("MLP"), gelu_approximate(c.gelu_approximate) {
  RG_CHECK(gelu_approximate == "none" || gelu_approximate == "tanh",
           "GPTConfig.gelu_approximate must be \"none\" or \"tanh\", got \"", gelu_approximate,
           "\"");
  c_fc = register_module("c_fc", std::make_shared<Linear>(c.n_embd, 4 * c.n_embd, c.bias, gen));
  c_proj = register_module("c_proj", std::make_shared<Linear>(4 * c.n_embd, c.n_embd, c.bias, gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(c.dropout, seed));
}

Tensor FeedForward::forward(const Tensor& x) {
  return dropout->forward(c_proj->forward(gelu(c_fc->forward(x), gelu_approximate)));
}

Block::Block(const GPTConfig& c, uint64_t seed, Generator* gen) : Module("Block") {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(c.n_embd, 1e-5, c.bias));
  attn =
      register_module("attn", std::make_shared<CausalSelfAttention>(
                                  c.n_embd, c.n_head, c.block_size, c.dropout, c.bias, seed, gen));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(c.n_embd, 1e-5, c.bias));
  mlp = register_module("mlp", std::make_shared<FeedForward>(c, seed + 2, gen));
}

Tensor Block::forward(const Tensor& x) {
  Tensor h1 = add(x, attn->forward(ln_1->forward(x)));
  return add(h1, mlp->forward(ln_2->forward(h1)));
}

GPT::GPT(const GPTConfig& c) : Module("GPT"), config_(c) {
  RG_CHECK(c.vocab_size > 0 && c.block_size > 0 && c.n_layer > 0 && c.n_embd > 0,
           "GPT: config sizes must be positive (vocab_size ", c.vocab_size, ", block_size ",
           c.block_size, ", n_layer ", c.n_layer, ", n_embd ", c.n_embd, ")");
  Generator gen{c.seed, 0};
  auto transformer = register_module("transformer", std::make_shared<Module>("ModuleDict"));
  wte = transformer->register_module("wte",
                                     std::make_shared<Embedding>(c.vocab_size, c.n_embd, &gen));
  wpe = transformer->register_module("wpe",
                                     std::make_shared<Embedding>(c.block_size, c.n_embd, &gen));
  drop = transformer->register_module("drop",
                                      std::make_shared<Dropout>(c.dropout, dropout_seed(c, 0)));
  auto blocks = transformer->register_module("h", std::make_shared<Module>("ModuleList"));
  for (int64_t i = 0; i < c.n_layer; ++i)
    h.push_back(blocks->register_module(std::to_string(i),
                                        std::make_shared<Block>(c, dropout_seed(c, 1 + i), &gen)));
  ln_f = transformer->register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, 1e-5, c.bias));
  lm_head =
      register_module("lm_head", std::make_shared<Linear>(c.n_embd, c.vocab_size, false, &gen));
  lm_head->tie_weight(wte->weight);
  positions_ = register_buffer("positions", arange(c.block_size, DType::i64), false);
  init_weights(&gen);
}

// nanoGPT's _init_weights over every Linear and Embedding (each tensor once), then the
// scaled init of the residual projections.
void GPT::init_weights(Generator* gen) {
  std::unordered_set<const TensorImpl*> done;
  auto once = [&](const Tensor& t) { return t.defined() && done.insert(t.impl()).second; };
  std::vector<Module*> order;
  auto walk = [&](auto&& self, Module* m) -> void {
    order.push_back(m);
    for (const auto& [name, child] : m->named_children()) self(self, child.get());
  };
  walk(walk, this);
  for (Module* m : order) {
    if (auto* lin = dynamic_cast<Linear*>(m)) {
      if (once(lin->weight)) init::normal_(lin->weight, 0.0, 0.02, gen);
      if (once(lin->bias)) init::zeros_(lin->bias);
    } else if (auto* emb = dynamic_cast<Embedding*>(m)) {
      if (once(emb->weight)) init::normal_(emb->weight, 0.0, 0.02, gen);
    }
  }
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config_.n_layer));
  for (const auto& [name, p] : named_parameters()) {
    const std::string suffix = "c_proj.weight";
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      init::normal_(p, 0.0, proj_std, gen);
  }
}

Tensor GPT::forward(const Tensor& idx) {
  RG_CHECK(idx.dim() == 2, "GPT: expected token ids [B, T], got shape ", shape_str(idx.shape()));
  const int64_t T = idx.size(1);
  RG_CHECK(T <= config_.block_size, "GPT: sequence length ", T, " exceeds block_size ",
           config_.block_size);
  Tensor pos = positions_.narrow(0, 0, T);
  Tensor x = drop->forward(add(wte->forward(idx), wpe->forward(pos)));
  for (auto& block : h) {
    if (checkpoint_activations) {
      auto run = [block](const std::vector<Tensor>& in) { return (*block)(in[0]); };
      x = checkpoint(run, {x}, dropout_generators(*block));
    } else {
      x = (*block)(x);  // through its forward hooks (FSDP's gathers)
    }
  }
  return lm_head->forward(ln_f->forward(x));
}

std::pair<Tensor, Tensor> GPT::forward(const Tensor& idx, const Tensor& targets,
                                       Reduction reduction, int64_t ignore_index) {
  Tensor logits = forward(idx);
  return {logits, cross_entropy(logits, targets, reduction, ignore_index)};
}

}  // namespace rg::nn
