// GPT-2 124M as bench/simulate predicts it at scale (docs/scale.md): its gradients in the
// order backward makes them ready, with the backward time at which each is ready, from a
// per-GPU compute time split by FLOPs.
#pragma once

#include <vector>

namespace rg::sim {

struct Gpt2Shape {
  int layers = 12, width = 768, context = 1024, vocab = 50257;
};

// One gradient: its element count and when it is ready, as a fraction of backward's time.
struct GradEvent {
  double elements = 0, ready_fraction = 0;
};

// The gradients in ready order: lm_head's backward first (its weight is tied to wte, so that
// gradient completes only at the end), then ln_f, blocks from last to first (per block:
// mlp.c_proj, mlp.c_fc, ln_2, attn.c_proj, attn.c_attn, ln_1), wpe, wte. Time is spent per
// matmul in proportion to its FLOPs (attention scores counted with attn.c_attn).
std::vector<GradEvent> gpt2_gradients(const Gpt2Shape& s = {});

// Forward FLOPs per token: 2 per matmul weight (lm_head included) + 2·layers·context·width.
double gpt2_forward_flops_per_token(const Gpt2Shape& s = {});

}  // namespace rg::sim
