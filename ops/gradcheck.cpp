// Finite-difference gradient checking in f64 (central differences, one element at a time).
#include "ops/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/grad_mode.h"
#include "ops/ops.h"

namespace rg {

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions options) {
  std::vector<Tensor> xs;
  for (const Tensor& t : inputs) {
    Tensor x = t.detach().to(kCPU);
    if (is_floating(x.dtype())) x = x.to(DType::f64).clone().requires_grad_(true);
    xs.push_back(x);
  }
  Tensor out0;
  {
    NoGradGuard no_grad;
    out0 = fn(xs);
  }
  Generator gen{12345, 0};
  Tensor w = rand(out0.shape(), DType::f64, kCPU, &gen) + 0.5;
  auto loss_of = [&](const std::vector<Tensor>& args) { return sum(mul(fn(args), w)); };

  Tensor loss = loss_of(xs);
  loss.backward();

  GradcheckResult result;
  std::ostringstream report;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].requires_grad()) continue;
    Tensor analytic = xs[i].grad().defined() ? xs[i].grad() : zeros_like(xs[i]);
    auto a = analytic.to_vector<double>();
    double* data = xs[i].data<double>();
    for (int64_t k = 0; k < xs[i].numel(); ++k) {
      double saved = data[k];
      double plus, minus;
      {
        NoGradGuard no_grad;
        data[k] = saved + options.eps;
        plus = loss_of(xs).item();
        data[k] = saved - options.eps;
        minus = loss_of(xs).item();
        data[k] = saved;
      }
      double numeric = (plus - minus) / (2 * options.eps);
      double abs_err = std::abs(numeric - a[k]);
      double rel_err = abs_err / std::max(std::abs(numeric), 1e-12);
      if (abs_err > result.worst_abs_error) {
        result.worst_abs_error = abs_err;
        result.worst_rel_error = rel_err;
        report.str("");
        report << "input " << i << " (shape " << shape_str(xs[i].shape()) << ") element " << k
               << ": analytic " << a[k] << ", numeric " << numeric << ", abs error " << abs_err;
      }
      if (abs_err > options.atol + options.rtol * std::abs(numeric)) result.ok = false;
    }
  }
  result.report = report.str();
  if (result.report.empty()) result.report = "all gradients match";
  return result;
}

}  // namespace rg
