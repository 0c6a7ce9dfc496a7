#include "core/tensor.h"

#include <cstddef>
#include <cstring>
#include <vector>

#include "core/device_interface.h"
#include "core/dispatch.h"
#include "core/memory_limits.h"
#include "core/shape_checks.h"

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

namespace {

// A host vector of n elements; std::bad_alloc becomes the one error of an allocation failure.
template <typename V>
V host_vector(int64_t n, const char* what) {
  try {
    return V(size_t(n));
  } catch (const std::bad_alloc&) {
    throw allocation_error(what, uint64_t(n) * sizeof(typename V::value_type));
  }
}

// The bytes a view reads, from its first element to its last (strides are >= 0), brought
// to the host through the device's copy when the tensor is not on the cpu.
std::vector<std::byte> host_span(const Tensor& t) {
  int64_t span = 1;
  for (int64_t d = 0; d < t.dim(); ++d) span += (t.size(d) - 1) * t.stride(d);
  auto bytes = host_vector<std::vector<std::byte>>(span * itemsize(t.dtype()), "to_vector");
  if (t.device().is_cpu())
    std::memcpy(bytes.data(), t.data_ptr(), bytes.size());
  else
    device_interface(t.device().type)
        .copy(bytes.data(), kCPU, t.data_ptr(), t.device(), bytes.size());
  return bytes;
}

}  // namespace

// Walks the view in row-major order over the host copy of its span; core alone (no copy
// kernel), so printing and item() work without ops.
template <typename T>
std::vector<T> Tensor::to_vector() const {
  const int64_t n = numel();
  auto out = host_vector<std::vector<T>>(n, "to_vector");
  if (n == 0) return out;
  const std::vector<std::byte> bytes = host_span(*this);
  const Shape& sh = shape();
  const Strides& st = strides();
  dispatch_dtype<DTypes::all>(dtype(), "to_vector", [&]<typename S>(TypeTag<S>) {
    const S* p = reinterpret_cast<const S*>(bytes.data());
    std::vector<int64_t> index(sh.size(), 0);
    int64_t at = 0;  // element offset of `index` within the span
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<T>(static_cast<double>(p[at]));
      for (int64_t d = dim() - 1; d >= 0; --d) {  // odometer step
        if (++index[d] < sh[d]) {
          at += st[d];
          break;
        }
        at -= (sh[d] - 1) * st[d];
        index[d] = 0;
      }
    }
  });
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

Tensor empty(const Shape& shape, DType dtype, Device device) {
  const size_t nbytes = checked_nbytes(shape, itemsize(dtype), "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = allocate_storage(nbytes, device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Shape& shape, const Strides& strides, int64_t offset) {
  checked_numel(shape, "view");  // the ops name themselves first (ops/views.cpp)
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
  impl->storage = borrow_storage(data, checked_nbytes(shape, itemsize(dtype), "from_blob"), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace rg
