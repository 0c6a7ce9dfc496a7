// binary: out = f(a, b) for every BinaryOp; a and b share a dtype and are broadcast to out's
// shape (stride-0 views). Comparisons write bool; arithmetic writes a's dtype.
// The fused activation derivatives take (grad, x) or (grad, y); see scalar_ops.cuh.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename Out, typename In>
struct BinaryFn {
  BinaryOp op;
  RG_HD Out operator()(In a, In b) const {
    using A = acc_t<In>;
    return convert<Out>(binary_apply(op, convert<A>(a), convert<A>(b)));
  }
};

void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  RG_CHECK(a.dtype() == b.dtype(), op_name(op), ": inputs must share a dtype, got ", a.dtype(),
           " and ", b.dtype());
  dispatch_all(a.dtype(), "binary", [&](auto tag) {
    using In = typename decltype(tag)::type;
    if (out.dtype() == a.dtype())
      elementwise<In, In, In>(op_name(op), BinaryFn<In, In>{op}, out, {a, b});
    else if (out.dtype() == DType::b8)
      elementwise<bool, In, In>(op_name(op), BinaryFn<bool, In>{op}, out, {a, b});
    else
      RG_FAIL(op_name(op), ": output dtype ", out.dtype(), " for inputs ", a.dtype());
  });
}

}  // namespace

void register_binary_kernels(KernelTable& k) {
  k.binary = run_binary;
}
}  // namespace rg::RG_BACKEND
