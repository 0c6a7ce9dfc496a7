// How an op records itself for autograd. Every op that records a node writes its derivative
// as a struct above its forward, in the op's family file (ops/<family>.cpp):
//
//   // d(mul): grad * b for a, grad * a for b.
//   struct MulDerivative {
//     SavedTensor a, b;                    // what the formula reads, saved at forward time
//     std::vector<Tensor> operator()(const Tensor& grad) const {  // grad: d loss / d out
//       return {mul(grad, b.get()), mul(grad, a.get())};           // one per input, in order
//     }
//   };
//
// and the forward records it, the one way an op registers a derivative:
//   if (needs_grad({a, b})) record("mul", out, {a, b}, MulDerivative{SavedTensor(a, "mul"), ...});
//
// Gradients for inputs that don't need one may be left undefined. Tensors the formula reads
// are held as SavedTensor, so an in-place write after the forward is reported by name.
// Elementwise rows get their derivatives from the op table (ops/elementwise.cpp).
#pragma once
#include <initializer_list>

#include "autograd/grad_mode.h"
#include "autograd/node.h"

namespace rg {

bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);
void record(const char* op, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn backward);
// Shared checks.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
void check_defined(const char* op, const Tensor& t, const char* what);

}  // namespace rg
