// CausalSelfAttention (see nn/attention.h).
#include "nn/attention.h"

#include <cmath>
#include <limits>

namespace rg::nn {

CausalSelfAttention::CausalSelfAttention(int64_t embd, int64_t heads, int64_t block, double dropout,
                                         bool bias, uint64_t dropout_seed, Generator* gen)
    : Module("CausalSelfAttention"), n_embd(embd), n_head(heads), block_size(block) {
  RG_CHECK(heads > 0 && embd % heads == 0, "CausalSelfAttention: n_embd ", embd,
           " is not divisible by n_head ", heads);
  c_attn = register_module("c_attn", std::make_shared<Linear>(embd, 3 * embd, bias, gen));
  c_proj = register_module("c_proj", std::make_shared<Linear>(embd, embd, bias, gen));
  attn_dropout = register_module("attn_dropout", std::make_shared<Dropout>(dropout, dropout_seed));
  resid_dropout =
      register_module("resid_dropout", std::make_shared<Dropout>(dropout, dropout_seed + 1));
  future_ = register_buffer("future_mask", logical_not(tril_mask(block, block)), false);
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  RG_CHECK(x.dim() == 3 && x.size(2) == n_embd, "CausalSelfAttention: expected input [B, T, ",
           n_embd, "], got ", shape_str(x.shape()));
  const int64_t B = x.size(0), T = x.size(1), C = n_embd, H = n_head, D = C / H;
  RG_CHECK(T <= block_size, "CausalSelfAttention: sequence length ", T, " exceeds block_size ",
           block_size);
  Tensor packed = c_attn->forward(x);  // [B, T, 3C]: q, k, v side by side
  Tensor y;
  if (is_training() && attn_dropout->p > 0) {  // dropout on the probabilities: written out
    std::vector<Tensor> qkv = split(packed, C, 2);
    auto heads = [&](const Tensor& t) { return t.reshape({B, T, H, D}).transpose(1, 2); };
    y = attention_written_out(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]));  // [B,H,T,D]
    y = y.transpose(1, 2).contiguous().view({B, T, C});
  } else {  // the fused kernel, the heads cut and merged inside one node
    y = packed_qkv_attention(packed, H, /*is_causal=*/true);
  }
  return resid_dropout->forward(c_proj->forward(y));
}

Tensor CausalSelfAttention::attention_written_out(const Tensor& q, const Tensor& k,
                                                  const Tensor& v) {
  const int64_t T = q.size(2), D = q.size(3);
  Tensor att = mul(matmul(q, k.transpose(-2, -1)), 1.0 / std::sqrt(static_cast<double>(D)));
  Tensor future = future_.narrow(0, 0, T).narrow(1, 0, T);
  att = masked_fill(att, future, -std::numeric_limits<double>::infinity());
  att = attn_dropout->forward(softmax(att, -1));
  return matmul(att, v);
}

}  // namespace rg::nn
