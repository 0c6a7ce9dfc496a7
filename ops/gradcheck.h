// gradcheck: compares the analytic gradient of fn at `inputs` with central finite
// differences in f64. Inputs are converted to f64 copies; each requires grad.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace rg {

struct GradcheckResult {
  bool ok = true;
  double worst_abs_error = 0;
  double worst_rel_error = 0;
  std::string report;  // names the input and element with the worst error
};

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

// fn maps the inputs to one tensor; its gradient is checked against a random projection
// weight (so non-scalar outputs are covered): L = sum(fn(inputs) * w).
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, GradcheckOptions options = {});

}  // namespace rg
