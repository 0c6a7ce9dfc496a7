// Tensor factories. Values are produced on the host or by the device's fill kernel.
#include <cmath>

#include "core/shape_checks.h"
#include "kernels/builtin.h"
#include "ops/ops.h"

namespace rg {

namespace {
// full, zeros and ones: the shape's size checked under the name the caller used.
Tensor filled(const char* op, const Shape& shape, double value, DType dtype, Device device) {
  checked_nbytes(shape, itemsize(dtype), op);
  Tensor out = empty(shape, dtype, device);
  if (out.numel()) RG_KERNEL(device, fill)(out, value);
  return out;
}
}  // namespace

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  return filled("full", shape, value, dtype, device);
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return filled("zeros", shape, 0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return filled("ones", shape, 1, dtype, device);
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
  return full({}, value, dtype, device);
}
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double value) {
  return full(t.shape(), value, t.dtype(), t.device());
}

Tensor tensor(const std::vector<double>& values, const Shape& shape, DType dtype, Device device) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  RG_CHECK(checked_numel(s, "tensor") == static_cast<int64_t>(values.size()),
           "tensor: ", values.size(), " values do not fill shape ", shape_str(s));
  Tensor host = from_blob(const_cast<double*>(values.data()), s, DType::f64, kCPU);
  return host.to(device, dtype).clone();  // clone: never alias the caller's vector
}

Tensor tensor(const std::vector<float>& values, const Shape& shape) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  RG_CHECK(checked_numel(s, "tensor") == static_cast<int64_t>(values.size()),
           "tensor: ", values.size(), " values do not fill shape ", shape_str(s));
  return from_blob(const_cast<float*>(values.data()), s, DType::f32, kCPU).clone();
}

Tensor tensor(const std::vector<int64_t>& values, const Shape& shape) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  RG_CHECK(checked_numel(s, "tensor") == static_cast<int64_t>(values.size()),
           "tensor: ", values.size(), " values do not fill shape ", shape_str(s));
  return from_blob(const_cast<int64_t*>(values.data()), s, DType::i64, kCPU).clone();
}

// The count is computed in double from finite bounds and must fit an int64 (2^63 is exactly
// representable, so the comparison is exact); the values are made in a host tensor, whose
// allocation fails as an rg::Error when the memory is not there.
Tensor arange(double start, double end, double step, DType dtype, Device device) {
  RG_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
           "arange: start, end and step must be finite, got start=", start, ", end=", end,
           ", step=", step);
  RG_CHECK(step != 0, "arange: step must be non-zero");
  const double count = std::max(0.0, std::ceil((end - start) / step));
  RG_CHECK(count < 9223372036854775808.0, "arange: [", start, ", ", end, ") in steps of ", step,
           " has too many elements (", count, ", more than 2^63-1)");
  const int64_t n = static_cast<int64_t>(count);
  checked_nbytes({n}, itemsize(dtype), "arange");
  Tensor host = empty({n}, DType::f64, kCPU);
  double* values = host.data<double>();
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return host.to(device, dtype).clone();  // clone: a fresh tensor even when no copy was needed
}

Tensor arange(int64_t end, DType dtype, Device device) {
  return arange(0, double(end), 1, dtype, device);
}

Tensor tril_mask(int64_t rows, int64_t cols, Device device) {
  Tensor mask = empty({rows, cols}, DType::b8, kCPU);
  bool* m = mask.data<bool>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m[i * cols + j] = j <= i;
  return mask.to(device);
}

}  // namespace rg
