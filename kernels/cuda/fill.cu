// fill: every element of out (any strides) = value converted to out's dtype on the host.
// Elementwise engine with no inputs (elementwise.cuh).
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T>
struct FillFn {
  T value;
  RG_HD T operator()() const { return value; }
};

void run_fill(const Tensor& out, double value) {
  dispatch_dtype<DTypes::all, bf16>(out.dtype(), "fill", [&]<typename T>(TypeTag<T>) {
    elementwise<T>("fill", FillFn<T>{convert<T>(value)}, out, {});
  });
}

}  // namespace

void register_fill_kernels(KernelTable& k) { k.fill = run_fill; }
}  // namespace rg::RG_BACKEND
