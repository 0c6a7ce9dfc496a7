// unary: out = f(in) for every UnaryOp (neg, exp, ..., gelu, logical_not).
// out has in's shape and either in's dtype or bool; any strides (elementwise.cuh).
// Math in acc_t: f32/bf16 in float, f64 in double, integers in int64.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename Out, typename In>
struct UnaryFn {
  UnaryOp op;
  RG_HD Out operator()(In x) const { return convert<Out>(unary_apply(op, convert<acc_t<In>>(x))); }
};

void run_unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  dispatch_all(in.dtype(), "unary", [&](auto tag) {
    using In = typename decltype(tag)::type;
    if (out.dtype() == in.dtype())
      elementwise<In, In>(op_name(op), UnaryFn<In, In>{op}, out, {in});
    else if (out.dtype() == DType::b8)
      elementwise<bool, In>(op_name(op), UnaryFn<bool, In>{op}, out, {in});
    else
      RG_FAIL(op_name(op), ": output dtype ", out.dtype(), " for input ", in.dtype());
  });
}

}  // namespace

void register_unary_kernels(KernelTable& k) {
  k.unary = run_unary;
}
}  // namespace rg::RG_BACKEND
