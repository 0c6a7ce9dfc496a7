// CausalSelfAttention, GPT-2 style:
//   x [B,T,C] -> c_attn -> q,k,v [B,T,C] each -> heads [B,H,T,C/H]
//   y = softmax(masked_fill(q k^T / sqrt(C/H), future, -inf)) v -> [B,T,C] -> c_proj
//   -> resid_dropout
// y comes from the fused attention op (scaled_dot_product_attention, causal: no T x T scores
// or probabilities stored) unless dropout applies to the probabilities (training with
// attn_dropout.p > 0), which only the written-out composition can do, as in nanoGPT.
// Parameters as nanoGPT: c_attn.weight [3C, C], c_attn.bias [3C], c_proj.weight [C, C],
// c_proj.bias [C]. The causal mask is a non-persistent buffer (not in state_dict, like
// nanoGPT with flash attention), of size block_size x block_size; T <= block_size.
#pragma once
#include "nn/layers.h"

namespace rg::nn {

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t n_embd, int64_t n_head, int64_t block_size, double dropout = 0.0,
                      bool bias = true, uint64_t dropout_seed = 0, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  int64_t n_embd, n_head, block_size;
  std::shared_ptr<Linear> c_attn, c_proj;
  std::shared_ptr<Dropout> attn_dropout, resid_dropout;

 private:
  // softmax(masked scores) -> attn_dropout -> @ v, for dropout on the probabilities.
  Tensor attention_written_out(const Tensor& q, const Tensor& k, const Tensor& v);
  Tensor future_;  // bool [block, block], true strictly above the diagonal
};

}  // namespace rg::nn
