// The test side of the reduction table (RG_REDUCE_OPS, core/op_table.h): for every
// reduction, an f64 reference written independently of the table, the input ranges the
// tests draw from, and its public function. tests/kernels_cpu/test_reduce.cpp,
// tests/kernels/test_reduce.cpp and tests/autograd/test_gradcheck.cpp iterate over the
// table and look each op up here; an op without an entry fails those tests, naming it, so
// a new row cannot go untested (nor a wrong row pass: the reference is not the row).
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/op_table.h"
#include "ops/ops.h"

namespace rg::test {

struct ReduceCase {
  enum How { fold, select_value, select_index } how;
  double start;                                 // fold: the result over no elements
  double (*step)(double acc, double x);         // fold: the result after one more element
  double (*finish)(double acc, int64_t count);  // fold
  bool (*better)(double best, double x);        // select: x replaces best (first wins ties)
  double lo, hi;                                // range of floating inputs
  double int_lo, int_hi;                        // range of integer inputs (rounded down)
  // rg::<name>(x, dims, keepdim); null for `index` rows, which take one dim.
  Tensor (*function)(const Tensor&, const std::vector<int64_t>&, bool);
};

namespace reduce_reference {
inline double add(double acc, double x) { return acc + x; }
inline double times(double acc, double x) { return acc * x; }
inline double as_is(double acc, int64_t) { return acc; }
inline double average(double acc, int64_t n) { return acc / double(n); }
// A NaN beats any number and nothing beats a NaN.
inline bool greater(double best, double x) {
  return std::isnan(x) ? !std::isnan(best) : !std::isnan(best) && x > best;
}
inline bool less(double best, double x) {
  return std::isnan(x) ? !std::isnan(best) : !std::isnan(best) && x < best;
}
}  // namespace reduce_reference

inline const ReduceCase& reduce_case(ReduceOp op) {
  using namespace reduce_reference;
  using C = ReduceCase;
  static const std::map<std::string, ReduceCase> cases = {
      {"sum", {C::fold, 0, add, as_is, nullptr, -1, 1, -50, 50, &rg::sum}},
      {"mean", {C::fold, 0, add, average, nullptr, -1, 1, -50, 50, &rg::mean}},
      {"amax", {C::select_value, 0, nullptr, nullptr, greater, -1, 1, -50, 50, &rg::amax}},
      {"amin", {C::select_value, 0, nullptr, nullptr, less, -1, 1, -50, 50, &rg::amin}},
      {"argmax", {C::select_index, 0, nullptr, nullptr, greater, -1, 1, -50, 50, nullptr}},
      {"argmin", {C::select_index, 0, nullptr, nullptr, less, -1, 1, -50, 50, nullptr}},
      // Products of many elements under- or overflow: integers in {-1, 0, 1}, floats near 1.
      {"prod", {C::fold, 1, times, as_is, nullptr, -1.25, 1.25, -1, 2, &rg::prod}},
  };
  auto it = cases.find(op_name(op));
  if (it == cases.end())
    throw Error(std::string("tests/reduce_cases.h has no reference for the reduction ") +
                op_name(op));
  return it->second;
}

// Every op of the table.
inline std::vector<ReduceOp> all_reduce_ops() {
  std::vector<ReduceOp> ops;
  for (int i = 0; i < kNumReduceOps; ++i) ops.push_back(ReduceOp(i));
  return ops;
}

}  // namespace rg::test
