// GPT-2 as in nanoGPT's model.py: the same module tree, parameter names, shapes and init,
// so checkpoints map one to one.
//   transformer.wte [V,C], transformer.wpe [block,C], transformer.drop,
//   transformer.h.{i}: ln_1, attn (c_attn [3C,C], c_proj [C,C]), ln_2,
//                      mlp (c_fc [4C,C], GELU, c_proj [C,4C], dropout)
//   transformer.ln_f, lm_head [V,C] (no bias) tied to transformer.wte (the same tensor:
//   listed once by parameters(), under both names by state_dict()).
// Init (nanoGPT): Linear/Embedding weights ~ normal(0, 0.02), biases 0, LayerNorm 1/0, and
// every c_proj.weight ~ normal(0, 0.02/sqrt(2*n_layer)); all drawn from Generator{seed, 0},
// so the same config gives the same model on every rank.
#pragma once
#include <string>
#include <utility>

#include "nn/attention.h"
#include "nn/checkpoint.h"

namespace rg::nn {

struct GPTConfig {
  int64_t vocab_size = 50304;
  int64_t block_size = 1024;  // the longest context
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_embd = 768;
  double dropout = 0.0;
  bool bias = true;      // biases in Linear and LayerNorm layers
  uint64_t seed = 1337;  // init and dropout generators
  // The MLP's GELU, as rg::gelu(x, approximate): "none" (exact; nanoGPT's nn.GELU(), so a
  // nanoGPT checkpoint gives nanoGPT's outputs) or "tanh" (GPT-2/HuggingFace's gelu_new, and
  // ringgrad's only GELU before this field existed: set it to reproduce older runs).
  std::string gelu_approximate = "none";
};

// The block's feed-forward part, nanoGPT's `MLP`: c_fc -> GELU -> c_proj -> dropout.
class FeedForward : public Module {
 public:
  FeedForward(const GPTConfig& config, uint64_t dropout_seed, Generator* gen);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Linear> c_fc, c_proj;
  std::shared_ptr<Dropout> dropout;
  std::string gelu_approximate;
};

class Block : public Module {
 public:
  Block(const GPTConfig& config, uint64_t dropout_seed, Generator* gen);
  Tensor forward(const Tensor& x) override;  // x + attn(ln_1(x)), then + mlp(ln_2(x))
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<FeedForward> mlp;
};

class GPT : public Module {
 public:
  explicit GPT(const GPTConfig& config);
  // idx [B,T] integer token ids, T <= block_size -> logits [B,T,vocab_size]
  Tensor forward(const Tensor& idx) override;
  // Logits and cross-entropy against targets [B,T] (rows equal to ignore_index count for
  // nothing; nanoGPT uses -1).
  std::pair<Tensor, Tensor> forward(const Tensor& idx, const Tensor& targets,
                                    Reduction reduction = Reduction::mean,
                                    int64_t ignore_index = -1);
  const GPTConfig& config() const { return config_; }
  // Recompute each block's activations in backward instead of keeping them (rg::checkpoint):
  // only the blocks' inputs stay alive between forward and backward. Same gradients.
  bool checkpoint_activations = false;

  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<Dropout> drop;
  std::vector<std::shared_ptr<Block>> h;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> lm_head;

 private:
  void init_weights(Generator* gen);
  GPTConfig config_;
  // The position ids 0 .. block_size - 1, a non-persistent buffer (it moves with the model):
  // made once, since building it copies from the host (a GPU synchronization) every step.
  Tensor positions_;
};

}  // namespace rg::nn
