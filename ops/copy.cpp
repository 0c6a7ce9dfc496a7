// Copies: clone, contiguous, to(device/dtype) and the in-place copy_/fill_/zero_.
// Cross-device copies go through the device interface (contiguous bytes), conversions and
// strided layouts through the device's `copy` kernel.
#include "core/device_interface.h"
#include "kernels/builtin.h"
#include "kernels/cuda/stream.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

void check_inplace(const char* op, const Tensor& self, const Tensor& other = Tensor()) {
  RG_CHECK(!GradMode::is_enabled() ||
               (!self.requires_grad() && !(other.defined() && other.requires_grad())),
           op,
           ": in-place operation on a tensor that requires grad; run it under NoGradGuard "
           "(as optimizers do) or use the out-of-place op");
}

// dst <- src: shapes equal (src already expanded), any devices, any dtypes.
void copy_raw(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.device() == src.device()) {
    RG_KERNEL(dst.device(), copy)(dst, src);
    return;
  }
  // Convert and densify on the source side, move bytes, then lay out on the destination.
  Tensor packed = src;
  if (packed.dtype() != dst.dtype() || !packed.is_contiguous()) {
    packed = empty(src.shape(), dst.dtype(), src.device());
    RG_KERNEL(src.device(), copy)(packed, src);
  }
  Tensor landing = dst.is_contiguous() ? dst : empty(dst.shape(), dst.dtype(), dst.device());
  const Device mover = dst.device().is_cpu() ? src.device() : dst.device();
  device_interface(mover.type)
      .copy(landing.data_ptr(), dst.device(), packed.data_ptr(), src.device(), dst.nbytes());
  if (!landing.is_same(dst)) RG_KERNEL(dst.device(), copy)(dst, landing);
}

// A host-to-device copy that may run without a host wait: from pinned memory, bytes as
// they are (same dtype, contiguous), to a GPU. From pageable memory the driver would stage
// the bytes synchronously anyway, so that copy stays an ordinary synchronous one.
bool copies_async(const Tensor& x, Device device, DType dtype) {
  return x.device().is_cpu() && (device.is_cuda() || device.is_sim()) && x.is_pinned() &&
         x.dtype() == dtype && x.is_contiguous();
}

// d(clone): the gradient itself.
struct CloneDerivative {
  std::vector<Tensor> operator()(const Tensor& grad) const { return {grad}; }
};

// d(to): the gradient moved and converted back to the input's device and dtype.
struct ToDerivative {
  Device device;
  DType dtype;
  std::vector<Tensor> operator()(const Tensor& grad) const { return {to(grad, device, dtype)}; }
};

}  // namespace

Tensor clone(const Tensor& x) {
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  copy_raw(out, x);
  if (needs_grad({x})) record("clone", out, {x}, CloneDerivative{});
  return out;
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }

Tensor to(const Tensor& x, Device device, DType dtype, bool non_blocking) {
  if (x.device() == device && x.dtype() == dtype) return x;
  RG_CHECK(!(x.requires_grad() && !is_floating(dtype)),
           "to: cannot convert a tensor that "
           "requires grad to the non-floating type ",
           dtype);
  Tensor out = empty(x.shape(), dtype, device);
  if (non_blocking && copies_async(x, device, dtype))
    gpu::copy_async(out, x);  // records the pinned block's use: it outlives the copy
  else
    copy_raw(out, x);
  if (needs_grad({x})) record("to", out, {x}, ToDerivative{x.device(), x.dtype()});
  return out;
}

Tensor Tensor::contiguous() const { return rg::contiguous(*this); }
Tensor Tensor::clone() const { return rg::clone(*this); }
Tensor Tensor::to(DType dtype) const { return rg::to(*this, device(), dtype); }
Tensor Tensor::to(Device device, bool non_blocking) const {
  return rg::to(*this, device, dtype(), non_blocking);
}
Tensor Tensor::to(Device device, DType dtype, bool non_blocking) const {
  return rg::to(*this, device, dtype, non_blocking);
}

Tensor Tensor::pin_memory() const {
  RG_CHECK(device().is_cpu(), "pin_memory: only cpu tensors can be pinned, got one on ", device());
  if (is_pinned()) return *this;
  Tensor pinned = gpu::empty_pinned(shape(), dtype());
  copy_raw(pinned, *this);  // host to host: a plain copy
  return pinned;
}

Tensor& Tensor::copy_(const Tensor& src) const {
  check_inplace("copy_", *this, src);
  Shape target = broadcast_shapes(shape(), src.shape(), "copy_");
  RG_CHECK(target == shape(), "copy_: source of shape ", shape_str(src.shape()),
           " cannot be broadcast to the destination's shape ", shape_str(shape()));
  copy_raw(*this, rg::expand(src.detach(), shape()));
  bump_version();
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::fill_(double value) const {
  check_inplace("fill_", *this);
  if (numel()) RG_KERNEL(device(), fill)(*this, value);
  bump_version();
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::zero_() const { return fill_(0.0); }

}  // namespace rg
