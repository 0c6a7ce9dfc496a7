// The backward engine's entry point, and the few tensor operations it borrows from the ops
// layer. autograd sits below ops (every op records a node), so it cannot call rg::add; the
// ops layer hands these in through set_grad_arithmetic() when Tensor::backward starts
// (ops/backward.cpp), before the engine first needs them.
#pragma once
#include "core/tensor.h"

namespace rg {

// What autograd needs to sum and accumulate gradients. Each runs without recording a node.
struct GradArithmetic {
  Tensor (*add)(const Tensor& a, const Tensor& b) = nullptr;       // a + b, a new tensor
  void (*add_into)(const Tensor& acc, const Tensor& g) = nullptr;  // acc += g in place
  Tensor (*clone)(const Tensor& t) = nullptr;                      // a fresh contiguous copy
  Tensor (*convert)(const Tensor& t, DType dtype) = nullptr;       // t.to(dtype)
};
void set_grad_arithmetic(const GradArithmetic& arithmetic);
// Throws rg::Error when the ops layer has not registered it (no backward was started).
const GradArithmetic& grad_arithmetic();

// Runs backward from `root`, whose gradient is `root_grad` (same shape): every node
// reachable from root runs once, latest first; leaves accumulate into .grad.
void run_backward(const Tensor& root, const Tensor& root_grad, bool retain_graph);

}  // namespace rg
