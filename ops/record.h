// How an op records itself for autograd. Usage inside an op:
//   Tensor out = ...forward...;
//   if (needs_grad({a, b}))
//     record("mul", out, {a, b}, [sa = SavedTensor(a, "mul"), ...](const Tensor& g) {
//       return std::vector<Tensor>{...grad for a..., ...grad for b...};
//     });
// Gradients returned for inputs that don't need one may be left undefined.
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
