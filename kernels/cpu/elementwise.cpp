// CPU elementwise kernels: unary, binary (inputs already broadcast by the op layer),
// where, strided copy with dtype conversion, and fill. Every kernel walks its tensors with
// StridedLoop and has a contiguous fast path the compiler can vectorise. bf16 computes
// in float. Activation derivatives (gelu/relu/tanh/sigmoid backward) are binary ops.
#include <cmath>

#include "core/op_table.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/strided_loop.h"

namespace rg::cpu {
namespace {

constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

template <typename C>
C gelu(C x) {
  return C(0.5) * x * (C(1) + std::tanh(C(kGeluScale) * (x + C(kGeluCubic) * x * x * x)));
}

template <typename C>
C gelu_grad(C g, C x) {
  C u = C(kGeluScale) * (x + C(kGeluCubic) * x * x * x);
  C t = std::tanh(u);
  C du = C(kGeluScale) * (C(1) + C(3 * kGeluCubic) * x * x);
  return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du);
}

template <typename Out, typename In, typename F>
void map1(const Tensor& out, const Tensor& in, F f) {
  StridedLoop<2> loop({&out, &in});
  loop.run([&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(compute_t<In>(x[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            Out(f(compute_t<In>(*reinterpret_cast<const In*>(p[1] + i * s[1]))));
    }
  });
}

template <typename Out, typename In, typename F>
void map2(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  StridedLoop<3> loop({&out, &a, &b});
  loop.run([&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
    using C = compute_t<In>;
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(C(x[i]), C(y[i])));
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {  // tensor op scalar
      C yv = C(y[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(C(x[i]), yv));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            Out(f(C(*reinterpret_cast<const In*>(p[1] + i * s[1])),
                  C(*reinterpret_cast<const In*>(p[2] + i * s[2]))));
    }
  });
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& out, const Tensor& in) {
  using C = compute_t<T>;
  switch (op) {
    case UnaryOp::neg: return map1<T, T>(out, in, [](C x) { return C(-x); });
    case UnaryOp::exp: return map1<T, T>(out, in, [](C x) { return C(std::exp(x)); });
    case UnaryOp::log: return map1<T, T>(out, in, [](C x) { return C(std::log(x)); });
    case UnaryOp::sqrt: return map1<T, T>(out, in, [](C x) { return C(std::sqrt(x)); });
    case UnaryOp::rsqrt: return map1<T, T>(out, in, [](C x) { return C(C(1) / std::sqrt(x)); });
    case UnaryOp::abs: return map1<T, T>(out, in, [](C x) { return C(x < C(0) ? -x : x); });
    case UnaryOp::sign:
      return map1<T, T>(out, in, [](C x) { return C((x > C(0)) - (x < C(0))); });
    case UnaryOp::tanh: return map1<T, T>(out, in, [](C x) { return C(std::tanh(x)); });
    case UnaryOp::sigmoid:
      return map1<T, T>(out, in, [](C x) { return C(C(1) / (C(1) + std::exp(-x))); });
    case UnaryOp::relu: return map1<T, T>(out, in, [](C x) { return x > C(0) ? x : C(0); });
    case UnaryOp::gelu: return map1<T, T>(out, in, [](C x) { return C(gelu(x)); });
    case UnaryOp::sin: return map1<T, T>(out, in, [](C x) { return C(std::sin(x)); });
    case UnaryOp::cos: return map1<T, T>(out, in, [](C x) { return C(std::cos(x)); });
    case UnaryOp::square: return map1<T, T>(out, in, [](C x) { return C(x * x); });
    case UnaryOp::reciprocal: return map1<T, T>(out, in, [](C x) { return C(C(1) / x); });
    case UnaryOp::logical_not: return map1<bool, T>(out, in, [](C x) { return x == C(0); });
  }
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = compute_t<T>;
  switch (op) {
    case BinaryOp::add: return map2<T, T>(out, a, b, [](C x, C y) { return C(x + y); });
    case BinaryOp::sub: return map2<T, T>(out, a, b, [](C x, C y) { return C(x - y); });
    case BinaryOp::mul: return map2<T, T>(out, a, b, [](C x, C y) { return C(x * y); });
    case BinaryOp::div: return map2<T, T>(out, a, b, [](C x, C y) { return C(x / y); });
    case BinaryOp::pow: return map2<T, T>(out, a, b, [](C x, C y) { return C(std::pow(x, y)); });
    case BinaryOp::maximum:
      return map2<T, T>(out, a, b, [](C x, C y) { return x != x ? x : (x > y ? x : y); });
    case BinaryOp::minimum:
      return map2<T, T>(out, a, b, [](C x, C y) { return x != x ? x : (x < y ? x : y); });
    case BinaryOp::eq: return map2<bool, T>(out, a, b, [](C x, C y) { return x == y; });
    case BinaryOp::ne: return map2<bool, T>(out, a, b, [](C x, C y) { return x != y; });
    case BinaryOp::lt: return map2<bool, T>(out, a, b, [](C x, C y) { return x < y; });
    case BinaryOp::le: return map2<bool, T>(out, a, b, [](C x, C y) { return x <= y; });
    case BinaryOp::gt: return map2<bool, T>(out, a, b, [](C x, C y) { return x > y; });
    case BinaryOp::ge: return map2<bool, T>(out, a, b, [](C x, C y) { return x >= y; });
    case BinaryOp::gelu_backward:
      return map2<T, T>(out, a, b, [](C g, C x) { return C(gelu_grad(g, x)); });
    case BinaryOp::relu_backward:
      return map2<T, T>(out, a, b, [](C g, C x) { return x > C(0) ? g : C(0); });
    case BinaryOp::tanh_backward:
      return map2<T, T>(out, a, b, [](C g, C y) { return C(g * (C(1) - y * y)); });
    case BinaryOp::sigmoid_backward:
      return map2<T, T>(out, a, b, [](C g, C y) { return C(g * y * (C(1) - y)); });
  }
}

void unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  switch (in.dtype()) {
    case DType::f32: return unary_typed<float>(op, out, in);
    case DType::f64: return unary_typed<double>(op, out, in);
    case DType::bf16: return unary_typed<bf16_t>(op, out, in);
    case DType::i32: return unary_typed<int32_t>(op, out, in);
    case DType::i64: return unary_typed<int64_t>(op, out, in);
    case DType::b8:
      RG_CHECK(op == UnaryOp::logical_not, op_name(op), ": not supported for bool tensors");
      return map1<bool, bool>(out, in, [](bool x) { return !x; });
  }
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (a.dtype()) {
    case DType::f32: return binary_typed<float>(op, out, a, b);
    case DType::f64: return binary_typed<double>(op, out, a, b);
    case DType::bf16: return binary_typed<bf16_t>(op, out, a, b);
    case DType::i32: return binary_typed<int32_t>(op, out, a, b);
    case DType::i64: return binary_typed<int64_t>(op, out, a, b);
    case DType::b8:
      RG_CHECK(is_comparison(op), op_name(op), ": not supported for bool tensors");
      return binary_typed<int32_t>(op, out, a.to(DType::i32), b.to(DType::i32));
  }
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  RG_DISPATCH_ALL(out.dtype(), "where", [&]<typename T>() {
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
  if constexpr (std::is_same_v<Out, bf16_t>) return bf16_t(static_cast<float>(x));
  else if constexpr (std::is_same_v<In, bf16_t>) return static_cast<Out>(static_cast<float>(x));
  else return static_cast<Out>(x);
}

void copy(const Tensor& out, const Tensor& in) {
  RG_DISPATCH_ALL(out.dtype(), "copy", [&]<typename Out>() {
    RG_DISPATCH_ALL(in.dtype(), "copy", [&]<typename In>() {
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
  RG_DISPATCH_ALL(out.dtype(), "fill", [&]<typename T>() {
    T v = convert<T, double>(value);
    StridedLoop<1> loop({&out});
    loop.run([&](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    });
  });
}

}  // namespace

void register_elementwise_kernels(KernelTable& k) {
  k.unary = unary;
  k.binary = binary;
  k.where = where;
  k.copy = copy;
  k.fill = fill;
}
}  // namespace rg::cpu
