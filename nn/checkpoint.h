// Activation checkpointing (torch.utils.checkpoint): trade compute for memory.
//   Tensor y = rg::checkpoint([&](const std::vector<Tensor>& in) { return block(in[0]); }, {x});
// runs fn without recording its graph, so none of its intermediate activations are kept; only
// the inputs are saved. In backward the node recomputes fn with the graph on, from the saved
// inputs, and backpropagates through the recomputed graph: the parameters fn uses get their
// gradients there (post-accumulate hooks, and so the DDP reducer, fire as usual), and the
// inputs' gradients flow on. The generators listed are set back to their state at forward
// time for the recomputation (dropout draws the same mask), then restored; so is the forward's
// autocast state (the recomputation casts as the forward did). The result is the
// same as without checkpointing, bit for bit on the cpu: same kernels, same order.
// Limits: fn returns one tensor; with grad mode off, or when no input requires grad, fn
// simply runs (nothing would flow back to the inputs, as in PyTorch's reentrant variant).
#pragma once
#include <functional>
#include <vector>

#include "nn/module.h"

namespace rg {

using CheckpointFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

Tensor checkpoint(CheckpointFn fn, const std::vector<Tensor>& inputs,
                  std::vector<Generator*> generators = {});

// The generators of every Dropout in the module tree (what checkpointing a module restores).
std::vector<Generator*> dropout_generators(nn::Module& module);

}  // namespace rg
