// binary: out = f(a, b) for every row of the op table's RG_BINARY_OPS, and binary_backward:
// grad_in = the row's gradient for input `which` of (grad_out, a, b, out). a and b share a
// dtype and are broadcast to out's shape (stride-0 views). `boolean` rows (comparisons)
// write bool; the others write a's dtype. One instantiation per op and storage type: the
// op's functor (core/elementwise_scalar.h) is a template parameter, not a per-element switch.
#include "core/elementwise_scalar.h"
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename Fn, typename Out, typename In>
struct BinaryFn {
  RG_HD Out operator()(In a, In b) const {
    using A = acc_t<In>;
    return convert<Out>(Fn::forward(convert<A>(a), convert<A>(b)));
  }
};

template <typename Fn, int which, typename T>
struct BinaryGradFn {
  RG_HD T operator()(T g, T a, T b, T y) const {
    using A = acc_t<T>;
    return convert<T>(
        Fn::template gradient<which>(convert<A>(g), convert<A>(a), convert<A>(b), convert<A>(y)));
  }
};

template <typename Fn>
void binary_with(Fn, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_dtype<DTypes::all, bf16>(a.dtype(), op_name(Fn::op), [&]<typename In>(TypeTag<In>) {
    if constexpr (scalar::admits<Fn::rule, In>) {
      using Out = std::conditional_t<Fn::rule == DTypeRule::boolean, bool, In>;
      elementwise<Out, In, In>(op_name(Fn::op), BinaryFn<Fn, Out, In>{}, out, {a, b});
    } else {
      RG_FAIL(op_name(Fn::op), ": unsupported dtype ", a.dtype());
    }
  });
}

template <typename Fn>
void binary_backward_with(Fn, int which, const Tensor& grad_in, const Tensor& grad_out,
                          const Tensor& a, const Tensor& b, const Tensor& out) {
  if constexpr (Fn::rule == DTypeRule::boolean) {
    RG_FAIL(op_name(Fn::op), ": has no gradient (its output is bool)");
  } else {
    dispatch_dtype<DTypes::floating, bf16>(a.dtype(), op_name(Fn::op), [&]<typename T>(TypeTag<T>) {
      if (which == 0)
        elementwise<T, T, T, T, T>(op_name(Fn::op), BinaryGradFn<Fn, 0, T>{}, grad_in,
                                   {grad_out, a, b, out});
      else
        elementwise<T, T, T, T, T>(op_name(Fn::op), BinaryGradFn<Fn, 1, T>{}, grad_in,
                                   {grad_out, a, b, out});
    });
  }
}

void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  scalar::with_functor(op, [&](auto fn) { binary_with(fn, out, a, b); });
}
void run_binary_backward(BinaryOp op, int which, const Tensor& grad_in, const Tensor& grad_out,
                         const Tensor& a, const Tensor& b, const Tensor& out) {
  scalar::with_functor(
      op, [&](auto fn) { binary_backward_with(fn, which, grad_in, grad_out, a, b, out); });
}

}  // namespace

void register_binary_kernels(KernelTable& k) {
  k.binary = run_binary;
  k.binary_backward = run_binary_backward;
}
}  // namespace rg::RG_BACKEND
