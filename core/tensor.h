// Tensor: a cheap handle to (storage, shape, strides in elements, offset, dtype, device)
// plus the autograd slot. Copies of a Tensor share everything (like torch.Tensor);
// views share the storage. The op functions (rg::add, rg::matmul, ...) are declared in
// ops/ops.h and defined in ops/, beside their derivatives.
//
// Layers: this header is core. The method sugar below marked "(ops/)" or "(autograd/)" is
// declared here only because C++ needs every member declared in its class; it is defined
// in that upper layer, and no code in core/ calls it. The core_alone test links core/ by
// itself, so a call that sneaks into core fails to link (docs/architecture.md).
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"

namespace rg {

class Node;  // autograd/node.h

// A tensor's autograd state as core sees it: enough to print it. autograd/meta.h defines
// the real thing (AutogradMeta), stored in TensorImpl::autograd.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad_flag() const = 0;   // requires_grad_(true) was called
  virtual const char* grad_fn_name() const = 0;  // null for leaves
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  std::shared_ptr<AutogradMetaInterface> autograd;  // null until autograd needs it
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- metadata (core/tensor.cpp)
  const Shape& shape() const { return checked().shape; }
  const Strides& strides() const { return checked().strides; }
  int64_t dim() const { return static_cast<int64_t>(checked().shape.size()); }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t offset() const { return checked().offset; }
  int64_t numel() const { return numel_of(checked().shape); }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device; }
  size_t nbytes() const { return numel() * itemsize(dtype()); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return checked().storage; }
  void* data_ptr() const;  // storage data + offset
  template <typename T>
  T* data() const {
    RG_CHECK(dtype_of<T>::value == dtype(), "Tensor::data: tensor is ", dtype(), ", asked for ",
             dtype_of<T>::value);
    return static_cast<T*>(data_ptr());
  }
  // Value of a one-element tensor (copied to the host when needed).
  double item() const;
  template <typename T>
  T item() const {
    return static_cast<T>(item());
  }
  // All elements in row-major order, converted to T (copied to the host when needed).
  template <typename T>
  std::vector<T> to_vector() const;

  uint64_t version() const { return storage()->version.load(std::memory_order_relaxed); }
  void bump_version() const { storage()->version.fetch_add(1, std::memory_order_relaxed); }

  // ---- views and conversions (ops/views.cpp, ops/copy.cpp); differentiable
  Tensor view(const Shape& shape) const;     // needs compatible strides
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // 2-D transpose
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor expand(const Shape& shape) const;
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;
  // non_blocking (PyTorch's spelling): a copy from pinned host memory (pin_memory()) to a
  // GPU is queued on the device's current stream and returns without waiting; kernels
  // queued later on that stream see the data. Other copies, and every copy to the host,
  // stay synchronous.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(Device device, DType dtype, bool non_blocking = false) const;
  // A copy in pinned (page-locked) host memory, for non_blocking copies; the tensor itself
  // when it is already pinned. cpu tensors only.
  Tensor pin_memory() const;
  bool is_pinned() const { return checked().storage->pinned; }

  // ---- in-place (ops/); bump the version counter. const like PyTorch: a Tensor is a handle,
  // and these change the data it points at, not the handle.
  Tensor& copy_(const Tensor& src) const;
  Tensor& fill_(double value) const;
  Tensor& zero_() const;
  Tensor& add_(const Tensor& other, double alpha = 1.0) const;
  Tensor& sub_(const Tensor& other) const;
  Tensor& mul_(const Tensor& other) const;
  Tensor& mul_(double value) const;
  Tensor& div_(const Tensor& other) const;
  Tensor& div_(double value) const;

  // ---- reductions and common ops as methods (ops/)
  Tensor sum() const;
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor pow(double exponent) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;

  // ---- autograd (autograd/)
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  bool is_leaf() const;
  Tensor grad() const;                // undefined when no gradient was accumulated
  void set_grad(const Tensor& grad);  // replaces .grad (undefined clears it)
  Tensor& mutable_grad();             // the slot itself, for accumulation
  std::shared_ptr<Node> grad_fn() const;
  Tensor detach() const;  // shares storage, no graph
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  void retain_grad() const;

 private:
  const TensorImpl& checked() const {
    RG_CHECK(impl_ != nullptr, "Tensor: use of an undefined tensor");
    return *impl_;
  }
  std::shared_ptr<TensorImpl> impl_;
};

// ---- raw construction, no autograd (core/tensor.cpp)
Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = kCPU);
Tensor make_view(const Tensor& base, const Shape& shape, const Strides& strides, int64_t offset);
// Tensor over memory the caller owns (not copied); must outlive the tensor.
Tensor from_blob(void* data, const Shape& shape, DType dtype = DType::f32, Device device = kCPU);

std::ostream& operator<<(std::ostream& os, const Tensor& t);  // core/print.cpp
std::string repr(const Tensor& t, int64_t edge_items = 3);

}  // namespace rg
