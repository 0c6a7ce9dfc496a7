// Hooks into backward, the ones the data-parallel reducer is built on:
//   register_hook(t, fn)                      fn(grad) runs when t's gradient is computed
//   register_post_accumulate_grad_hook(p, fn) fn(p) runs once p.grad is final for this
//                                             backward (after accumulation)
//   queue_callback(fn)                        fn() runs when the current backward finishes
// Hooks fire in the order gradients become ready.
#pragma once
#include <chrono>
#include <functional>

#include "autograd/node.h"

namespace rg {

void register_hook(const Tensor& t, TensorHook hook);
void register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateHook hook);
// Only valid while a backward runs in this thread (e.g. from a hook).
void queue_callback(std::function<void()> callback);
bool in_backward();

// Called for every node the engine runs in this thread, with its start and end times
// (used to draw backward on a timeline). An empty function removes it.
using BackwardObserver = std::function<void(const Node& node, std::chrono::steady_clock::time_point start,
                                            std::chrono::steady_clock::time_point end)>;
void set_backward_observer(BackwardObserver observer);

}  // namespace rg
