// Gradient-norm clipping (see nn/optim/clip_grad.h).
#include "nn/optim/clip_grad.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "autograd/grad_mode.h"
#include "ops/ops.h"

namespace rg::optim {
namespace {

// The defined gradients (detached) with their position in `params`.
std::vector<std::pair<size_t, Tensor>> gradients(const std::vector<Tensor>& params) {
  std::vector<std::pair<size_t, Tensor>> out;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = params[i].grad();
    if (g.defined()) out.emplace_back(i, g.detach());
  }
  return out;
}

// Positions into `grads` grouped by (device, dtype): groups in order of first appearance,
// each in parameter order.
std::vector<std::vector<size_t>> by_device_dtype(
    const std::vector<std::pair<size_t, Tensor>>& grads) {
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i].second;
    auto same = [&](const std::vector<size_t>& group) {
      const Tensor& h = grads[group[0]].second;
      return h.device() == g.device() && h.dtype() == g.dtype();
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end())
      groups.push_back({i});
    else
      it->push_back(i);
  }
  return groups;
}

// Each gradient's sum of squares, in the order of `grads`: one sum_squares_multi per
// (device, dtype) and one device-to-host copy per device (the parts of a device are
// concatenated there first).
std::vector<double> sums_of_squares(const std::vector<std::pair<size_t, Tensor>>& grads) {
  const std::vector<std::vector<size_t>> groups = by_device_dtype(grads);
  std::vector<double> sums(grads.size(), 0.0);
  std::vector<bool> copied(groups.size(), false);
  for (size_t a = 0; a < groups.size(); ++a) {
    if (copied[a]) continue;
    const Device device = grads[groups[a][0]].second.device();
    std::vector<Tensor> parts;      // an f64 [n] per dtype of this device
    std::vector<size_t> positions;  // into grads, in the order of cat(parts)
    for (size_t b = a; b < groups.size(); ++b) {
      if (grads[groups[b][0]].second.device() != device) continue;
      std::vector<Tensor> tensors;
      for (size_t i : groups[b]) tensors.push_back(grads[i].second), positions.push_back(i);
      parts.push_back(sum_squares_multi(tensors));
      copied[b] = true;
    }
    const Tensor host = (parts.size() == 1 ? parts[0] : cat(parts)).to(kCPU);
    for (size_t k = 0; k < positions.size(); ++k) sums[positions[k]] = host.data<double>()[k];
  }
  return sums;
}

// Every gradient multiplied by scale in place: one scale_multi per (device, dtype).
void scale_gradients(const std::vector<std::pair<size_t, Tensor>>& grads, double scale) {
  for (const std::vector<size_t>& group : by_device_dtype(grads)) {
    std::vector<Tensor> tensors;
    for (size_t i : group) {
      const Tensor& g = grads[i].second;
      if (g.is_contiguous())
        tensors.push_back(g);
      else
        g.mul_(scale);  // a strided gradient (rare): a kernel of its own
    }
    scale_multi(tensors, scale);
  }
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  double total = 0.0;
  for (double s : sums_of_squares(gradients(params))) total += s;  // in parameter order
  return std::sqrt(total);
}

double clip_scale(double norm, double max_norm) {
  RG_CHECK(max_norm > 0, "clip_grad_norm_: max_norm must be positive, got ", max_norm);
  const double scale = max_norm / (norm + 1e-6);
  return scale < 1.0 ? scale : 1.0;
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  RG_CHECK(max_norm > 0, "clip_grad_norm_: max_norm must be positive, got ", max_norm);
  const double norm = grad_norm(params);
  const double scale = clip_scale(norm, max_norm);
  if (scale < 1.0) scale_gradients_(params, scale);
  return norm;
}

Tensor grad_norm_on_device(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  const std::vector<std::pair<size_t, Tensor>> grads = gradients(params);
  RG_CHECK(!grads.empty(), "grad_norm_on_device: no parameter has a gradient");
  std::vector<Tensor> sum_of(grads.size());
  for (const std::vector<size_t>& group : by_device_dtype(grads)) {
    std::vector<Tensor> tensors;
    for (size_t i : group) tensors.push_back(grads[i].second);
    RG_CHECK(tensors[0].device() == grads[0].second.device(), "grad_norm_on_device: gradients on ",
             tensors[0].device().str(), " and ", grads[0].second.device().str(),
             "; one device only");
    const Tensor sums = sum_squares_multi(tensors);
    for (size_t k = 0; k < group.size(); ++k) sum_of[group[k]] = sums.narrow(0, int64_t(k), 1);
  }
  Tensor total = sum_of[0];  // grad_norm's 0.0 + s0
  for (size_t i = 1; i < sum_of.size(); ++i) total = add(total, sum_of[i]);
  return sqrt(total);
}

Tensor clip_scale_on_device(const Tensor& norm, double max_norm) {
  RG_CHECK(max_norm > 0, "clip_grad_norm_: max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  return clamp(max_norm / (norm + 1e-6), 0.0, 1.0);
}

void scale_gradients_(const std::vector<Tensor>& params, double scale) {
  NoGradGuard no_grad;
  scale_gradients(gradients(params), scale);
}

}  // namespace rg::optim
