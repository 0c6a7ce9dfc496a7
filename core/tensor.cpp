#include "core/tensor.h"

#include <cstring>

#include "core/device_interface.h"
#include "core/dispatch.h"

namespace rg {

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

bool Tensor::is_contiguous() const {
  const auto& sh = shape();
  const auto& st = strides();
  if (numel_of(sh) == 0) return true;
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (sh[i] == 1) continue;
    if (st[i] != expected) return false;
    expected *= sh[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(storage()->data) + offset() * static_cast<int64_t>(itemsize(dtype()));
}

double Tensor::item() const {
  RG_CHECK(numel() == 1, "item: tensor of shape ", shape_str(shape()), " has ", numel(),
           " elements, expected 1");
  return to_vector<double>()[0];
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(kCPU).contiguous();
  std::vector<T> out(host.numel());
  dispatch_dtype<DTypes::all>(host.dtype(), "to_vector", [&]<typename S>(TypeTag<S>) {
    const S* p = static_cast<const S*>(host.data_ptr());
    for (int64_t i = 0; i < host.numel(); ++i) out[i] = static_cast<T>(static_cast<double>(p[i]));
  });
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

Tensor empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape) RG_CHECK(s >= 0, "empty: negative size in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = allocate_storage(numel_of(shape) * itemsize(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Shape& shape, const Strides& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = borrow_storage(data, numel_of(shape) * itemsize(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace rg
