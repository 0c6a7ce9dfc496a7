// The test side of the op table (core/op_table.h): for every elementwise op, an f64
// reference written independently of the table (plain <cmath>), and the input range the
// tests draw from (where the op and its gradient are defined and well conditioned).
// tests/core/test_ops.cpp, tests/autograd/test_gradcheck.cpp and tests/kernels/ iterate
// over the table and look each op up here; an op without an entry fails those tests, so a
// new row cannot go untested.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/op_table.h"
#include "ops/ops.h"

namespace rg::test {

struct Range {
  double lo = -3, hi = 3;
};

struct UnaryCase {
  double (*reference)(double);
  Range x;
};

struct BinaryCase {
  double (*reference)(double, double);
  Range a, b;
};

inline const Range kPositive{0.2, 3};
inline const Range kAwayFromZero{0.5, 3};

inline double gelu_tanh_reference(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

inline const std::map<std::string, UnaryCase>& unary_cases() {
  static const std::map<std::string, UnaryCase> cases = {
      {"neg", {[](double v) { return -v; }, {}}},
      {"exp", {[](double v) { return std::exp(v); }, {}}},
      {"log", {[](double v) { return std::log(v); }, kPositive}},
      {"sqrt", {[](double v) { return std::sqrt(v); }, kPositive}},
      {"rsqrt", {[](double v) { return 1 / std::sqrt(v); }, kPositive}},
      {"abs", {[](double v) { return std::fabs(v); }, {}}},
      {"sign", {[](double v) { return double((v > 0) - (v < 0)); }, {}}},
      {"tanh", {[](double v) { return std::tanh(v); }, {}}},
      {"sigmoid", {[](double v) { return 1 / (1 + std::exp(-v)); }, {}}},
      {"relu", {[](double v) { return v > 0 ? v : 0.0; }, {}}},
      {"gelu", {[](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, {}}},
      {"gelu_tanh", {gelu_tanh_reference, {}}},
      {"silu", {[](double v) { return v / (1 + std::exp(-v)); }, {}}},
      {"sin", {[](double v) { return std::sin(v); }, {}}},
      {"cos", {[](double v) { return std::cos(v); }, {}}},
      {"square", {[](double v) { return v * v; }, {}}},
      {"reciprocal", {[](double v) { return 1 / v; }, kAwayFromZero}},
      {"logical_not", {[](double v) { return double(v == 0); }, {}}},
  };
  return cases;
}

inline const std::map<std::string, BinaryCase>& binary_cases() {
  static const std::map<std::string, BinaryCase> cases = {
      {"add", {[](double a, double b) { return a + b; }, {}, {}}},
      {"sub", {[](double a, double b) { return a - b; }, {}, {}}},
      {"mul", {[](double a, double b) { return a * b; }, {}, {}}},
      {"div", {[](double a, double b) { return a / b; }, {}, kAwayFromZero}},
      {"pow", {[](double a, double b) { return std::pow(a, b); }, kPositive, {-2, 2}}},
      {"maximum", {[](double a, double b) { return std::fmax(a, b); }, {}, {}}},
      {"minimum", {[](double a, double b) { return std::fmin(a, b); }, {}, {}}},
      {"eq", {[](double a, double b) { return double(a == b); }, {}, {}}},
      {"ne", {[](double a, double b) { return double(a != b); }, {}, {}}},
      {"lt", {[](double a, double b) { return double(a < b); }, {}, {}}},
      {"le", {[](double a, double b) { return double(a <= b); }, {}, {}}},
      {"gt", {[](double a, double b) { return double(a > b); }, {}, {}}},
      {"ge", {[](double a, double b) { return double(a >= b); }, {}, {}}},
  };
  return cases;
}

// The public function of every row, by name: rg::neg, rg::exp, ..., rg::add, ...
using UnaryFunction = Tensor (*)(const Tensor&);
using BinaryFunction = Tensor (*)(const Tensor&, const Tensor&);
inline const std::map<std::string, UnaryFunction>& unary_functions() {
#define RG_ENTRY(name, ...) {#name, [](const Tensor& x) { return ::rg::name(x); }},
  static const std::map<std::string, UnaryFunction> fns = {RG_UNARY_OPS(RG_ENTRY)};
#undef RG_ENTRY
  return fns;
}
inline const std::map<std::string, BinaryFunction>& binary_functions() {
#define RG_ENTRY(name, ...) \
  {#name, [](const Tensor& a, const Tensor& b) { return ::rg::name(a, b); }},
  static const std::map<std::string, BinaryFunction> fns = {RG_BINARY_OPS(RG_ENTRY)};
#undef RG_ENTRY
  return fns;
}

// Seeded random shapes and inputs: ranks 0-4, sizes 1-5 with the odd empty dim, and
// layouts that are contiguous, transposed or strided (every second element).
struct RandomInputs {
  std::mt19937_64 gen;
  explicit RandomInputs(uint64_t seed) : gen(seed) {}

  int64_t below(int64_t n) { return static_cast<int64_t>(gen() % static_cast<uint64_t>(n)); }
  double uniform(Range r) { return std::uniform_real_distribution<double>(r.lo, r.hi)(gen); }

  Shape shape(int max_rank = 4) {
    Shape s(below(max_rank + 1));
    for (auto& d : s) d = below(24) == 0 ? 0 : 1 + below(5);
    return s;
  }
  // A shape that broadcasts to `full`: some leading dims dropped, some others set to 1.
  Shape broadcastable_to(const Shape& full) {
    Shape s(full.begin() + below(static_cast<int64_t>(full.size()) + 1), full.end());
    for (auto& d : s)
      if (below(3) == 0) d = 1;
    return s;
  }
  // Values in `range` (integers: rounded, at least ceil(lo) when lo > 0; bool: random, but
  // true when lo > 0),
  // as a tensor of `dtype` in a random layout. `ties` rounds floats to halves, so
  // comparisons see equal values.
  Tensor tensor_of(const Shape& shape, DType dtype, Range range, bool ties = false) {
    std::vector<double> values(numel_of(shape));
    for (double& v : values) {
      v = uniform(range);
      if (ties) v = std::round(v * 2) / 2;
      if (dtype == DType::i32 || dtype == DType::i64) {
        v = std::round(v);
        if (range.lo > 0) v = std::max(v, std::ceil(range.lo));
      }
      if (dtype == DType::b8) v = range.lo > 0 ? 1 : double(below(2));
    }
    Tensor c = ::rg::tensor(values, {numel_of(shape)}, DType::f64).reshape(shape).to(dtype);
    switch (below(3)) {
      case 0:
        return c;
      case 1: {  // transposed: the same values through a permuted view
        if (c.dim() < 2) return c;
        std::vector<int64_t> reversed;
        for (int64_t d = c.dim() - 1; d >= 0; --d) reversed.push_back(d);
        return c.permute(reversed).contiguous().permute(reversed);
      }
      default: {  // strided: every second element of an interleaved copy
        int64_t last = c.dim();
        return cat({c.unsqueeze(last), c.unsqueeze(last)}, last).select(last, 0);
      }
    }
  }
};

}  // namespace rg::test
