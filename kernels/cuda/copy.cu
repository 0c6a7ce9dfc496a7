// copy: out = in converted to out's dtype (f32/f64/bf16/i32/i64/bool), same shape, any
// strides on both sides. Same dtype and both contiguous: one device memcpy. Otherwise the
// elementwise engine (elementwise.cuh) with a converting functor.
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename Out, typename In>
struct ConvertFn {
  RG_HD Out operator()(In x) const { return convert<Out>(x); }
};

void run_copy(const Tensor& out, const Tensor& in) {
  RG_DEBUG_ASSERT(out.shape() == in.shape(), "copy: shapes ", shape_str(out.shape()), " and ",
                  shape_str(in.shape()), " differ");
  if (out.numel() == 0) return;
  if (out.dtype() == in.dtype() && out.is_contiguous() && in.is_contiguous()) {
    device_memcpy(out.data_ptr(), in.data_ptr(), out.nbytes(), stream_for(out));
    return;
  }
  dispatch_dtype<DTypes::all, bf16>(out.dtype(), "copy", [&]<typename Out>(TypeTag<Out>) {
    dispatch_dtype<DTypes::all, bf16>(in.dtype(), "copy", [&]<typename In>(TypeTag<In>) {
      elementwise<Out, In>("copy", ConvertFn<Out, In>{}, out, {in});
    });
  });
}

}  // namespace

void register_copy_kernels(KernelTable& k) { k.copy = run_copy; }
}  // namespace rg::RG_BACKEND
