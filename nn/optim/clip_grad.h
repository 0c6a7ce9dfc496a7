// clip_grad_norm_: scales gradients in place so their global L2 norm is at most max_norm,
// and returns the norm before clipping (like torch.nn.utils.clip_grad_norm_).
// The norm is computed deterministically: each gradient's sum of squares in f64, by one
// multi-tensor reduction per device and dtype (rg::sum_squares_multi, split by shape only),
// copied to the host once per device and added on the host in parameter order.
// Scale: max_norm / (norm + 1e-6), applied only when < 1, by one multi-tensor pass
// (rg::scale_multi: the bits of g.mul_(scale) on each gradient).
// Parameters without a gradient are skipped.
// To fold clipping into AdamW's update instead of rewriting the gradients first:
//   opt.step(clip_scale(grad_norm(params), max_norm));   // same bits as clip, then step()
#pragma once
#include <vector>

#include "core/tensor.h"

namespace rg::optim {

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);
// The global L2 norm of the gradients, without clipping.
double grad_norm(const std::vector<Tensor>& params);
// The factor clip_grad_norm_ multiplies the gradients by: max_norm / (norm + 1e-6) when
// that is < 1, else 1 (no clipping). Throws unless max_norm > 0.
double clip_scale(double norm, double max_norm);
// Multiplies every defined gradient of params by scale in place, as clip_grad_norm_ does.
void scale_gradients_(const std::vector<Tensor>& params, double scale);

// The same on the device, with no host read (for graph capture; one device): grad_norm's
// bits as an f64 [1] tensor (the sums of squares added in parameter order, one small add per
// gradient, then sqrt), and clip_scale's (min(max_norm / (norm + 1e-6), 1); a NaN norm gives
// NaN here where clip_scale gives 1).
Tensor grad_norm_on_device(const std::vector<Tensor>& params);
Tensor clip_scale_on_device(const Tensor& norm, double max_norm);

}  // namespace rg::optim
