// Multi-tensor ops for the optimizers (see ops/ops.h): argument checks, then one kernel call
// (adamw_multi, sum_squares_multi in core/op_table.h) for the whole list.
#include <cmath>
#include <string>

#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {
namespace {

// "adamw_multi: set 2 grad has shape [3] and dtype float32; expected ..." style checks.
void check_set(size_t i, const AdamWTensors& set, const Tensor& first) {
  const Tensor* parts[] = {&set.param, &set.grad, &set.exp_avg, &set.exp_avg_sq};
  const char* names[] = {"param", "grad", "exp_avg", "exp_avg_sq"};
  for (int k = 0; k < 4; ++k) {
    const Tensor& t = *parts[k];
    RG_CHECK(t.defined(), "adamw_multi: set ", i, " ", names[k], " is an undefined tensor");
    RG_CHECK(t.device() == first.device(), "adamw_multi: set ", i, " ", names[k], " is on ",
             t.device().str(), ", set 0 param on ", first.device().str(),
             "; one call takes one device");
    RG_CHECK(t.dtype() == first.dtype(), "adamw_multi: set ", i, " ", names[k], " has dtype ",
             t.dtype(), ", set 0 param ", first.dtype(), "; one call takes one dtype");
    RG_CHECK(t.shape() == set.param.shape(), "adamw_multi: set ", i, " ", names[k], " has shape ",
             shape_str(t.shape()), ", its param ", shape_str(set.param.shape()));
    RG_CHECK(t.is_contiguous(), "adamw_multi: set ", i, " ", names[k], " (shape ",
             shape_str(t.shape()), ") is not contiguous");
  }
}

}  // namespace

void adamw_multi(const std::vector<AdamWTensors>& sets, const AdamWArgs& args, double grad_scale) {
  if (sets.empty()) return;
  const Tensor& first = sets[0].param;
  RG_CHECK(first.defined(), "adamw_multi: set 0 param is an undefined tensor");
  RG_CHECK(first.dtype() == DType::f32 || first.dtype() == DType::f64, "adamw_multi: dtype ",
           first.dtype(), "; the fused update takes float32 or float64");
  RG_CHECK(args.step >= 1, "adamw_multi: step must be >= 1, got ", args.step);
  RG_CHECK(std::isfinite(grad_scale), "adamw_multi: grad_scale must be finite, got ", grad_scale);
  for (size_t i = 0; i < sets.size(); ++i) check_set(i, sets[i], first);
  RG_KERNEL(first.device(), adamw_multi)(sets, args, grad_scale);
}

Tensor sum_squares_multi(const std::vector<Tensor>& tensors) {
  const Device device = tensors.empty() ? kCPU : tensors[0].device();
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    RG_CHECK(t.defined(), "sum_squares_multi: tensor ", i, " is an undefined tensor");
    RG_CHECK(t.device() == device, "sum_squares_multi: tensor ", i, " is on ", t.device().str(),
             ", tensor 0 on ", device.str(), "; one call takes one device");
    RG_CHECK(t.dtype() == tensors[0].dtype(), "sum_squares_multi: tensor ", i, " has dtype ",
             t.dtype(), ", tensor 0 ", tensors[0].dtype(), "; one call takes one dtype");
    RG_CHECK(is_floating(t.dtype()), "sum_squares_multi: tensor ", i, " has dtype ", t.dtype(),
             "; expected a floating dtype");
    inputs.push_back(contiguous(t.detach()));
  }
  Tensor out = zeros({int64_t(tensors.size())}, DType::f64, device);
  if (!inputs.empty()) RG_KERNEL(device, sum_squares_multi)(out, inputs);
  return out;
}

void scale_multi(const std::vector<Tensor>& tensors, double scale) {
  if (tensors.empty()) return;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    RG_CHECK(t.defined(), "scale_multi: tensor ", i, " is an undefined tensor");
    RG_CHECK(t.device() == tensors[0].device(), "scale_multi: tensor ", i, " is on ",
             t.device().str(), ", tensor 0 on ", tensors[0].device().str(),
             "; one call takes one device");
    RG_CHECK(t.dtype() == tensors[0].dtype() && is_floating(t.dtype()), "scale_multi: tensor ", i,
             " has dtype ", t.dtype(), ", tensor 0 ", tensors[0].dtype(),
             "; one call takes one floating dtype");
    RG_CHECK(t.is_contiguous(), "scale_multi: tensor ", i, " (shape ", shape_str(t.shape()),
             ") is not contiguous");
  }
  // The scale as x.mul_(scale) stores it: rounded to the dtype (exact in the compute type).
  const double stored = scalar_tensor(scale, tensors[0].dtype()).item();
  RG_KERNEL(tensors[0].device(), scale_multi)(tensors, stored);
}

}  // namespace rg
