// Whole-tensor comparisons used by tests and consistency checks (computed on the host).
#include <cmath>
#include <cstring>

#include "ops/ops.h"

namespace rg {

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) || std::isnan(vb[i])) return false;
    if (std::abs(va[i] - vb[i]) > atol + rtol * std::abs(vb[i])) return false;
  }
  return true;
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ha = a.to(kCPU).contiguous(), hb = b.to(kCPU).contiguous();
  return std::memcmp(ha.data_ptr(), hb.data_ptr(), ha.nbytes()) == 0;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  RG_CHECK(a.shape() == b.shape(), "max_abs_diff: shapes ", shape_str(a.shape()), " and ",
           shape_str(b.shape()), " differ");
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
  return worst;
}

}  // namespace rg
