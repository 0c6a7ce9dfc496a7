// clip_grad_norm_: scales gradients in place so their global L2 norm is at most max_norm,
// and returns the norm before clipping (like torch.nn.utils.clip_grad_norm_).
// The norm is computed deterministically: each gradient's sum of squares in f64, added
// on the host in parameter order. Scale: max_norm / (norm + 1e-6), applied only when < 1.
// Parameters without a gradient are skipped.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace rg::optim {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);
// The global L2 norm of the gradients, without clipping.
double grad_norm(const std::vector<Tensor>& params);

}  // namespace rg::optim
