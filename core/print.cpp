// PyTorch-style repr: tensor([[1.0000, 2.0000], ...], dtype=float64, device=sim).
// Tensors over 1000 elements show `edge_items` at each end of every dim, with "...".
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/tensor.h"

namespace rg {

namespace {

std::string format_value(double v, DType dtype) {
  char buf[64];
  if (dtype == DType::b8) return v != 0 ? "True" : "False";
  if (!is_floating(dtype)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else if (std::isnan(v) || std::isinf(v)) {
    return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  } else if (v != 0 && (std::abs(v) >= 1e8 || std::abs(v) < 1e-4)) {
    std::snprintf(buf, sizeof buf, "%.4e", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

void print_dim(std::ostringstream& os, const std::vector<double>& values, const Shape& shape,
               int64_t dim, int64_t base, bool summarize, int64_t edge, DType dtype, int indent) {
  if (shape.empty()) {
    os << format_value(values[0], dtype);
    return;
  }
  int64_t stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
  os << "[";
  int64_t n = shape[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * edge && i == edge) {
      os << "...";
      i = n - edge - 1;
      if (dim + 1 < static_cast<int64_t>(shape.size())) os << ",\n" << std::string(indent + 1, ' ');
      else os << ", ";
      continue;
    }
    if (dim + 1 == static_cast<int64_t>(shape.size())) os << format_value(values[base + i], dtype);
    else print_dim(os, values, shape, dim + 1, base + i * stride, summarize, edge, dtype, indent + 1);
    if (i + 1 < n) {
      if (dim + 1 < static_cast<int64_t>(shape.size())) os << ",\n" << std::string(indent + 1, ' ');
      else os << ", ";
    }
  }
  os << "]";
}

}  // namespace

std::string repr(const Tensor& t, int64_t edge_items) {
  if (!t.defined()) return "tensor(undefined)";
  std::ostringstream os;
  os << "tensor(";
  std::vector<double> values = t.to_vector<double>();
  bool summarize = t.numel() > 1000;
  print_dim(os, values, t.shape(), 0, 0, summarize, edge_items, t.dtype(), 7);
  if (t.numel() == 0 || summarize) os << ", shape=" << shape_str(t.shape());
  if (t.dtype() != DType::f32) os << ", dtype=" << dtype_name(t.dtype());
  if (!t.device().is_cpu()) os << ", device=" << t.device().str();
  if (const AutogradMetaInterface* meta = t.impl()->autograd.get()) {
    if (const char* fn = meta->grad_fn_name())
      os << ", grad_fn=<" << fn << ">";
    else if (meta->requires_grad_flag())
      os << ", requires_grad=True";
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << repr(t); }

}  // namespace rg
