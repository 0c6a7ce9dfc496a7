// Tensor factories. Values are produced on the host or by the device's fill kernel.
#include <cmath>

#include "kernels/builtin.h"
#include "ops/ops.h"

namespace rg {

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor out = empty(shape, dtype, device);
  if (out.numel()) RG_KERNEL(device, fill)(out, value);
  return out;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1, dtype, device); }
Tensor scalar_tensor(double value, DType dtype, Device device) { return full({}, value, dtype, device); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.dtype(), t.device()); }

Tensor tensor(const std::vector<double>& values, const Shape& shape, DType dtype, Device device) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  RG_CHECK(numel_of(s) == static_cast<int64_t>(values.size()), "tensor: ", values.size(),
           " values do not fill shape ", shape_str(s));
  Tensor host = from_blob(const_cast<double*>(values.data()), s, DType::f64, kCPU);
  return host.to(device, dtype).clone();  // clone: never alias the caller's vector
}

Tensor tensor(const std::vector<float>& values, const Shape& shape) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  RG_CHECK(numel_of(s) == static_cast<int64_t>(values.size()), "tensor: ", values.size(),
           " values do not fill shape ", shape_str(s));
  return from_blob(const_cast<float*>(values.data()), s, DType::f32, kCPU).clone();
}

Tensor tensor(const std::vector<int64_t>& values, const Shape& shape) {
  Shape s = shape.empty() ? Shape{static_cast<int64_t>(values.size())} : shape;
  RG_CHECK(numel_of(s) == static_cast<int64_t>(values.size()), "tensor: ", values.size(),
           " values do not fill shape ", shape_str(s));
  return from_blob(const_cast<int64_t*>(values.data()), s, DType::i64, kCPU).clone();
}

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  RG_CHECK(step != 0, "arange: step must be non-zero");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + i * step;
  return tensor(values, {n}, dtype, device);
}

Tensor arange(int64_t end, DType dtype, Device device) { return arange(0, double(end), 1, dtype, device); }

Tensor tril_mask(int64_t rows, int64_t cols, Device device) {
  Tensor mask = empty({rows, cols}, DType::b8, kCPU);
  bool* m = mask.data<bool>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m[i * cols + j] = j <= i;
  return mask.to(device);
}

}  // namespace rg
