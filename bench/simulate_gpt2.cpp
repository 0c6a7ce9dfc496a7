// GPT-2 124M's gradient timeline for bench/simulate; see simulate_gpt2.h.
#include "bench/simulate_gpt2.h"

namespace rg::sim {

namespace {

struct Param {
  double elements = 0, cost = 0;  // cost: backward FLOPs spent before it is ready
};

void add_block(std::vector<Param>& out, const Gpt2Shape& s) {
  const double d = s.width, attn = 2.0 * s.context * d;      // attention scores, per token
  out.push_back({4 * d * d + d, 2 * 4 * d * d});             // mlp.c_proj
  out.push_back({4 * d * d + 4 * d, 2 * 4 * d * d});         // mlp.c_fc
  out.push_back({2 * d, 0});                                 // ln_2
  out.push_back({d * d + d, 2 * d * d});                     // attn.c_proj
  out.push_back({3 * d * d + 3 * d, 2 * 3 * d * d + attn});  // attn.c_attn (+ scores)
  out.push_back({2 * d, 0});                                 // ln_1
}

}  // namespace

double gpt2_forward_flops_per_token(const Gpt2Shape& s) {
  const double d = s.width;
  return 2.0 * (s.layers * 12 * d * d + s.vocab * d) + 2.0 * s.layers * s.context * d;
}

std::vector<GradEvent> gpt2_gradients(const Gpt2Shape& s) {
  const double d = s.width;
  std::vector<Param> params;
  params.push_back({2 * d, 2.0 * s.vocab * d});  // ln_f, after lm_head's backward
  for (int l = 0; l < s.layers; ++l) add_block(params, s);
  params.push_back({double(s.context) * d, 0});  // wpe
  params.push_back({double(s.vocab) * d, 0});    // wte (tied with lm_head)
  const double total = gpt2_forward_flops_per_token(s);
  std::vector<GradEvent> out;
  double spent = 0;
  for (const Param& p : params) {
    spent += p.cost;
    out.push_back({p.elements, spent / total});
  }
  return out;
}

}  // namespace rg::sim
