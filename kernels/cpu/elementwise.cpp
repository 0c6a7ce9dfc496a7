// CPU elementwise kernels: unary, binary (inputs already broadcast by the op layer), their
// backward, where, strided copy with dtype conversion, and fill. unary/binary and their
// backward instantiate one loop per op of the op table (core/op_table.h) and storage type:
// the op is a template parameter (its scalar functor from core/elementwise_scalar.h), not a
// per-element switch. Every kernel walks its tensors with StridedLoop and has a contiguous
// fast path the compiler can vectorise. bf16 computes in float.
//
// Compiled per capability is only what vectorises to a different speed: the float dtypes
// (f32, f64, bf16) of the arithmetic rows, their gradients, where, and copies between float
// dtypes. Integer and bool tensors, the bool-valued rows (comparisons, logical_not) and
// conversions to or from an integer dtype run the baseline's loops on every CPU
// (baseline_elementwise below): a third of the instantiations, which every capability
// compiled again before (ninja: 50-63 s of a cold build per capability for this file).
#include <cmath>
#include <initializer_list>
#include <utility>

#include "core/elementwise_scalar.h"
#include "core/op_table.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/gelu_rows.h"
#include "kernels/cpu/strided_loop.h"

// The baseline's kernels for every dtype, which the other capabilities call for what they
// do not compile themselves (defined in the baseline build of this file).
namespace rg::cpu::baseline::baseline_elementwise {
void unary(UnaryOp op, const Tensor& out, const Tensor& in);
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
void copy(const Tensor& out, const Tensor& in);
}  // namespace rg::cpu::baseline::baseline_elementwise

namespace rg::cpu::RG_CPU_CAP {
namespace {

// The baseline compiles every dtype; a higher capability the float ones only.
constexpr bool kAllDtypes = RG_CPU_CAP_LEVEL == 0;
constexpr DTypes kOwnDtypes = kAllDtypes ? DTypes::all : DTypes::floating;
// Whether this capability runs `dtype` itself, or hands it (and bool-valued rows) to baseline.
bool runs_here(DType dtype, DTypeRule rule = DTypeRule::same) {
  return kAllDtypes || (is_floating(dtype) && rule != DTypeRule::boolean);
}

// out = f(ins...) elementwise over out's shape; every input has storage type In and is read
// as compute_t<In>; f's result is converted to Out.
template <typename Out, typename In, typename F, size_t... I>
void map_impl(std::index_sequence<I...>, const Tensor& out,
              const std::array<const Tensor*, sizeof...(I)>& ins, F f) {
  constexpr int N = sizeof...(I);
  using C = compute_t<In>;
  StridedLoop<N + 1> loop({&out, ins[I]...});
  loop.run([&](std::array<char*, N + 1> p, std::array<int64_t, N + 1> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x[N] = {reinterpret_cast<const In*>(p[I + 1])...};
    if (s[0] == sizeof(Out) && ((s[I + 1] == sizeof(In)) && ...)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(C(x[I][i])...));
      return;
    }
    if constexpr (N == 2) {  // tensor op scalar
      if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
        C b = C(x[1][0]);
        for (int64_t i = 0; i < n; ++i) o[i] = Out(f(C(x[0][i]), b));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<Out*>(p[0] + i * s[0]) =
          Out(f(C(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1]))...));
  });
}
template <typename Out, typename In, typename F, typename... Inputs>
void map(F f, const Tensor& out, const Inputs&... ins) {
  map_impl<Out, In>(std::index_sequence_for<Inputs...>{}, out, {&ins...}, f);
}

// bool for comparisons and logical_not, else the input's storage type.
template <typename Fn, typename T>
using out_t = std::conditional_t<Fn::rule == DTypeRule::boolean, bool, T>;

// The op table's float rows whose exp dominates their cost, on AVX-512 or AVX2 loops
// (gelu_rows.h) when every tensor is contiguous: GELU, tanh (AVX-512, 1M floats, 1 thread: forward
// 0.66 -> 0.39 ns an element, level with add; forward + backward through autograd 1.8 -> 1.3) and
// exact (4M floats, 1 thread: forward 11-14 -> 0.70 ns, gradient 17-21 -> 0.92), and their
// gradients. Returns false where the generated loop runs.
template <typename Fn>
bool row_kernel(const Tensor& out, std::initializer_list<const Tensor*> ins) {
#if RG_CPU_CAP_LEVEL > 0
  constexpr bool tanh = std::is_same_v<Fn, scalar::gelu_tanh_fn>;
  if constexpr (tanh || std::is_same_v<Fn, scalar::gelu_fn>) {
    if (out.dtype() != DType::f32 || !out.is_contiguous()) return false;
    for (const Tensor* t : ins)
      if (t->dtype() != DType::f32 || !t->is_contiguous() || t->shape() != out.shape())
        return false;
    const float* a = ins.begin()[0]->data<float>();
    const float* b = ins.size() > 1 ? ins.begin()[1]->data<float>() : nullptr;
    float* y = out.data<float>();
    parallel_for(out.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      const int64_t n = end - begin;
      if (b)  // backward: a = grad_out, b = the input
        tanh ? row::gelu_tanh_backward(y + begin, a + begin, b + begin, n)
             : row::gelu_erf_backward(y + begin, a + begin, b + begin, n);
      else
        tanh ? row::gelu_tanh(y + begin, a + begin, n) : row::gelu_erf(y + begin, a + begin, n);
    });
    return true;
  }
#endif
  (void)out, (void)ins;
  return false;
}

template <typename Fn>
void unary_with(Fn, const Tensor& out, const Tensor& in) {
  if (row_kernel<Fn>(out, {&in})) return;
  if constexpr (kAllDtypes || Fn::rule != DTypeRule::boolean) {
    dispatch_dtype<kOwnDtypes>(in.dtype(), op_name(Fn::op), [&]<typename T>(TypeTag<T>) {
      if constexpr (scalar::admits<Fn::rule, T>)
        map<out_t<Fn, T>, T>([](compute_t<T> x) { return Fn::forward(x); }, out, in);
      else
        RG_FAIL(op_name(Fn::op), ": unsupported dtype ", in.dtype());
    });
  }
}

template <typename Fn>
void binary_with(Fn, const Tensor& out, const Tensor& a, const Tensor& b) {
  if constexpr (kAllDtypes || Fn::rule != DTypeRule::boolean) {
    dispatch_dtype<kOwnDtypes>(a.dtype(), op_name(Fn::op), [&]<typename T>(TypeTag<T>) {
      using C = compute_t<T>;
      if constexpr (scalar::admits<Fn::rule, T>)
        map<out_t<Fn, T>, T>([](C x, C y) { return Fn::forward(x, y); }, out, a, b);
      else
        RG_FAIL(op_name(Fn::op), ": unsupported dtype ", a.dtype());
    });
  }
}

template <typename Fn>
void unary_backward_with(Fn, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in,
                         const Tensor& out) {
  if constexpr (Fn::rule == DTypeRule::boolean) {
    RG_FAIL(op_name(Fn::op), ": has no gradient (its output is bool)");
  } else {
    if (row_kernel<Fn>(grad_in, {&grad_out, &in})) return;
    dispatch_dtype<DTypes::floating>(in.dtype(), op_name(Fn::op), [&]<typename T>(TypeTag<T>) {
      using C = compute_t<T>;
      map<T, T>([](C g, C x, C y) { return Fn::gradient(g, x, y); }, grad_in, grad_out, in, out);
    });
  }
}

template <typename Fn>
void binary_backward_with(Fn, int which, const Tensor& grad_in, const Tensor& grad_out,
                          const Tensor& a, const Tensor& b, const Tensor& out) {
  if constexpr (Fn::rule == DTypeRule::boolean) {
    RG_FAIL(op_name(Fn::op), ": has no gradient (its output is bool)");
  } else {
    dispatch_dtype<DTypes::floating>(a.dtype(), op_name(Fn::op), [&]<typename T>(TypeTag<T>) {
      using C = compute_t<T>;
      auto grad_a = [](C g, C x, C y, C z) { return Fn::template gradient<0>(g, x, y, z); };
      auto grad_b = [](C g, C x, C y, C z) { return Fn::template gradient<1>(g, x, y, z); };
      if (which == 0)
        map<T, T>(grad_a, grad_in, grad_out, a, b, out);
      else
        map<T, T>(grad_b, grad_in, grad_out, a, b, out);
    });
  }
}

void unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  if (!runs_here(in.dtype(), info(op).rule))
    return baseline::baseline_elementwise::unary(op, out, in);
  scalar::with_functor(op, [&](auto fn) { unary_with(fn, out, in); });
}
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (!runs_here(a.dtype(), info(op).rule))
    return baseline::baseline_elementwise::binary(op, out, a, b);
  scalar::with_functor(op, [&](auto fn) { binary_with(fn, out, a, b); });
}
void unary_backward(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in,
                    const Tensor& out) {
  scalar::with_functor(op, [&](auto fn) { unary_backward_with(fn, grad_in, grad_out, in, out); });
}
void binary_backward(BinaryOp op, int which, const Tensor& grad_in, const Tensor& grad_out,
                     const Tensor& a, const Tensor& b, const Tensor& out) {
  scalar::with_functor(
      op, [&](auto fn) { binary_backward_with(fn, which, grad_in, grad_out, a, b, out); });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (!runs_here(out.dtype())) return baseline::baseline_elementwise::where(out, cond, a, b);
  dispatch_dtype<kOwnDtypes>(out.dtype(), "where", [&]<typename T>(TypeTag<T>) {
    StridedLoop<4> loop({&out, &cond, &a, &b});
    loop.run([&](std::array<char*, 4> p, std::array<int64_t, 4> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    });
  });
}

template <typename Out, typename In>
Out convert(In x) {
  if constexpr (std::is_same_v<Out, bf16_t>)
    return bf16_t(static_cast<float>(x));
  else if constexpr (std::is_same_v<In, bf16_t>)
    return static_cast<Out>(static_cast<float>(x));
  else
    return static_cast<Out>(x);
}

void copy(const Tensor& out, const Tensor& in) {
  if (!runs_here(out.dtype()) || !runs_here(in.dtype()))
    return baseline::baseline_elementwise::copy(out, in);
  dispatch_dtype<kOwnDtypes>(out.dtype(), "copy", [&]<typename Out>(TypeTag<Out>) {
    dispatch_dtype<kOwnDtypes>(in.dtype(), "copy", [&]<typename In>(TypeTag<In>) {
      StridedLoop<2> loop({&out, &in});
      loop.run([&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
        if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
          Out* o = reinterpret_cast<Out*>(p[0]);
          const In* x = reinterpret_cast<const In*>(p[1]);
          for (int64_t i = 0; i < n; ++i) o[i] = convert<Out, In>(x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<Out*>(p[0] + i * s[0]) =
                convert<Out, In>(*reinterpret_cast<const In*>(p[1] + i * s[1]));
        }
      });
    });
  });
}

void fill(const Tensor& out, double value) {
  dispatch_dtype<DTypes::all>(out.dtype(), "fill", [&]<typename T>(TypeTag<T>) {
    T v = convert<T, double>(value);
    StridedLoop<1> loop({&out});
    loop.run([&](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    });
  });
}

}  // namespace

#if RG_CPU_CAP_LEVEL == 0
namespace baseline_elementwise {  // for the other capabilities (declared at the top)
void unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  rg::cpu::baseline::unary(op, out, in);
}
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  rg::cpu::baseline::binary(op, out, a, b);
}
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  rg::cpu::baseline::where(out, cond, a, b);
}
void copy(const Tensor& out, const Tensor& in) { rg::cpu::baseline::copy(out, in); }
}  // namespace baseline_elementwise
#endif

void register_elementwise_kernels(KernelTable& k) {
  k.unary = unary;
  k.binary = binary;
  k.unary_backward = unary_backward;
  k.binary_backward = binary_backward;
  k.where = where;
  k.copy = copy;
  k.fill = fill;
}
}  // namespace rg::cpu::RG_CPU_CAP
