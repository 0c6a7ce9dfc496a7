// A plain f64 reference of nn::GPT (nn/gpt.h) for the exactness tests: forward, loss and the
// full backward written from the math with straight loops over std::vector<double>; nothing
// of ringgrad (no kernels, no ops) is used, so it can judge every CPU kernel path.
//
// What it computes (nanoGPT, dropout off, biases on, exact erf GELU, weight tying):
//   x0 = wte[idx] + wpe[t]
//   per block: h1 = x + c_proj(attn(c_attn(ln_1(x)))), x' = h1 + c_proj(gelu(c_fc(ln_2(h1))))
//   logits = ln_f(x_L) @ wte^T, loss = mean over the B*T rows of -log softmax(logits)[target]
// LayerNorm: (x - mean) / sqrt(var + 1e-5) * w + b, var the biased variance over C.
// Attention: q, k, v side by side in c_attn's [3C] output (q in [0, C), k in [C, 2C), v in
// [2C, 3C)), head h at columns h*D .. h*D + D - 1 of each (D = C / H); scores q.k / sqrt(D),
// causal (query t sees keys s <= t), softmax over s; the heads' outputs merged back at the
// same columns. GELU(x) = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2.
//
// Layouts (row-major): activations [N, width] with row r = b * T + t (N = B * T); Linear
// weights [out, in] and y = x W^T + bias; embeddings [rows, C]. Gradients have the shapes of
// their parameters; wte's gradient holds both its embedding and its lm_head use.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rg::exactness {

using Vec = std::vector<double>;

struct RefConfig {
  int64_t vocab = 0, block = 0, layers = 0, heads = 0, embd = 0;
  int64_t batch = 0, seq = 0;  // B and T of the batch
};

struct RefLayer {  // one Block's parameters, named as in nn::GPT after "transformer.h.{i}."
  Vec ln1_w, ln1_b, attn_w, attn_b, attn_proj_w, attn_proj_b;
  Vec ln2_w, ln2_b, fc_w, fc_b, mlp_proj_w, mlp_proj_b;
};

// The parameters, or their gradients (the same shapes).
struct RefParams {
  Vec wte, wpe, lnf_w, lnf_b;
  std::vector<RefLayer> layers;
};

// Zero-filled parameters (or gradients) of the config's shapes.
RefParams zero_params(const RefConfig& c);

// Every tensor under its nn::GPT parameter name, in GPT::named_parameters() order.
std::vector<std::pair<std::string, Vec*>> named(RefParams& p);

struct RefLayerNorm {  // what a LayerNorm keeps for backward
  Vec xhat;            // [N, C] normalized input
  Vec rstd;            // [N] 1 / sqrt(var + eps)
};

struct RefLayerCache {  // one block's activations kept for backward
  Vec x, ln1_out, qkv, probs, att_y, h1, ln2_out, fc_pre, gelu_out;  // probs [B, H, T, T]
  RefLayerNorm ln1, ln2;
};

struct RefForward {
  std::vector<RefLayerCache> layers;
  Vec x_final, lnf_out, probs;  // probs [N, V]: softmax of the logits
  RefLayerNorm lnf;
  double loss = 0;
};

// Forward of the batch idx [B, T] against targets [B, T] (every target counts).
RefForward reference_forward(const RefConfig& c, const RefParams& p,
                             const std::vector<int64_t>& idx, const std::vector<int64_t>& targets);

// The gradient of the loss with respect to every parameter.
RefParams reference_backward(const RefConfig& c, const RefParams& p, const RefForward& f,
                             const std::vector<int64_t>& idx, const std::vector<int64_t>& targets);

// Pieces shared by forward and backward (gpt_reference_forward.cpp).
Vec linear_forward(const Vec& x, const Vec& w, const Vec& bias, int64_t n, int64_t in, int64_t out);
double gelu(double x);
double gelu_grad(double x);

}  // namespace rg::exactness
