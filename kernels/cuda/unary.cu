// unary: out = f(in) for every row of the op table's RG_UNARY_OPS, and unary_backward:
// grad_in = the row's gradient(grad_out, in, out). One instantiation per op and storage type
// (the op's functor from core/elementwise_scalar.h is a template parameter; no per-element
// switch). out has in's shape and either in's dtype or bool (`boolean` rows); any strides
// (elementwise.cuh). Math in acc_t: f32/bf16 in float, f64 in double, integers in int64.
#include "core/elementwise_scalar.h"
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename Fn, typename Out, typename In>
struct UnaryFn {
  RG_HD Out operator()(In x) const { return convert<Out>(Fn::forward(convert<acc_t<In>>(x))); }
};

template <typename Fn, typename T>
struct UnaryGradFn {
  RG_HD T operator()(T g, T x, T y) const {
    using A = acc_t<T>;
    return convert<T>(Fn::gradient(convert<A>(g), convert<A>(x), convert<A>(y)));
  }
};

template <typename Fn>
void unary_with(Fn, const Tensor& out, const Tensor& in) {
  dispatch_dtype<DTypes::all, bf16>(in.dtype(), op_name(Fn::op), [&]<typename In>(TypeTag<In>) {
    if constexpr (scalar::admits<Fn::rule, In>) {
      using Out = std::conditional_t<Fn::rule == DTypeRule::boolean, bool, In>;
      elementwise<Out, In>(op_name(Fn::op), UnaryFn<Fn, Out, In>{}, out, {in});
    } else {
      RG_FAIL(op_name(Fn::op), ": unsupported dtype ", in.dtype());
    }
  });
}

template <typename Fn>
void unary_backward_with(Fn, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in,
                         const Tensor& out) {
  if constexpr (Fn::rule == DTypeRule::boolean) {
    RG_FAIL(op_name(Fn::op), ": has no gradient (its output is bool)");
  } else {
    dispatch_dtype<DTypes::floating,
                   bf16>(in.dtype(), op_name(Fn::op), [&]<typename T>(TypeTag<T>) {
      elementwise<T, T, T, T>(op_name(Fn::op), UnaryGradFn<Fn, T>{}, grad_in, {grad_out, in, out});
    });
  }
}

void run_unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  scalar::with_functor(op, [&](auto fn) { unary_with(fn, out, in); });
}
void run_unary_backward(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in,
                        const Tensor& out) {
  scalar::with_functor(op, [&](auto fn) { unary_backward_with(fn, grad_in, grad_out, in, out); });
}

}  // namespace

void register_unary_kernels(KernelTable& k) {
  k.unary = run_unary;
  k.unary_backward = run_unary_backward;
}
}  // namespace rg::RG_BACKEND
