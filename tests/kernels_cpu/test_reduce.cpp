// The cpu reduce kernel against an f64 reference (tests/reduce_cases.h) for every row of the
// reduction table: random shapes, dims, dtypes and layouts, ties and NaN, determinism.
#include <algorithm>
#include <cstring>
#include <limits>

#include "tests/kernels_cpu/helpers.h"
#include "tests/reduce_cases.h"

namespace rg::test {
namespace {

Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape out = shape;
  for (int64_t d : dims) out[d] = 1;
  return out;
}

// Naive f64 reference from tests/reduce_cases.h (not from the table's row): walks every
// input element once.
std::vector<double> reference(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims) {
  const ReduceCase& c = reduce_case(op);
  Shape out_shape = keepdim_shape(in.shape(), dims);
  int64_t n_out = numel_of(out_shape);
  std::vector<double> acc(n_out, c.start);
  std::vector<int64_t> arg(n_out, -1), count(n_out, 0);
  std::vector<double> x = values(in);
  for (int64_t i = 0; i < in.numel(); ++i) {
    int64_t rem = i, out_at = 0, out_mul = 1, red_at = 0, red_mul = 1;
    for (int64_t d = in.dim() - 1; d >= 0; --d) {
      int64_t idx = rem % in.size(d);
      rem /= in.size(d);
      if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
        red_at += idx * red_mul, red_mul *= in.size(d);
      } else {
        out_at += idx * out_mul;
      }
      out_mul *= out_shape[d];
    }
    double v = x[i];
    ++count[out_at];
    if (c.how == ReduceCase::fold) {
      acc[out_at] = c.step(acc[out_at], v);
    } else if (arg[out_at] < 0 || c.better(acc[out_at], v)) {
      // Row-major input order visits each output's reduced indices in increasing order.
      acc[out_at] = v, arg[out_at] = red_at;
    }
  }
  for (int64_t o = 0; o < n_out; ++o) {
    if (c.how == ReduceCase::fold) acc[o] = c.finish(acc[o], count[o]);
    if (c.how == ReduceCase::select_index) acc[o] = double(arg[o]);
  }
  return acc;
}

bool is_index(ReduceOp op) { return info(op).rule == ReduceRule::index; }

void check_reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims,
                  const std::string& what) {
  bool arg = is_index(op);
  Tensor out = empty(keepdim_shape(in.shape(), dims), arg ? DType::i64 : in.dtype());
  cpu().reduce(op, out, in, dims);
  std::vector<double> want = reference(op, in, dims);
  double scale = 1;
  if (op == ReduceOp::sum) {  // error grows with the magnitudes summed
    double total = 0;
    for (double v : values(in)) total += std::abs(v);
    scale = total + 1;
  }
  check_close(values(out), want, arg ? 0 : tolerance(in.dtype()), what, scale);
}

std::string describe(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims) {
  std::string s = std::string(op_name(op)) + " " + shape_str(in.shape()) + " " +
                  dtype_name(in.dtype()) + " dims [";
  for (int64_t d : dims) s += std::to_string(d) + ",";
  return s + "]" + (in.is_contiguous() ? "" : " strided");
}

TEST_CASE("reduce matches an f64 reference on random shapes, dims and dtypes") {
  std::mt19937 rng(1);
  const DType dtypes[] = {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64};
  for (int trial = 0; trial < 60; ++trial) {
    int ndim = 1 + trial % 4;
    Shape shape;
    for (int d = 0; d < ndim; ++d) {
      int pick = std::uniform_int_distribution<int>(0, 9)(rng);
      shape.push_back(pick == 0   ? 1
                      : pick == 1 ? 0
                                  : std::uniform_int_distribution<int>(2, 37)(rng));
    }
    if (trial % 7 != 0) std::replace(shape.begin(), shape.end(), int64_t(0), int64_t(3));
    std::vector<int64_t> dims;
    for (int d = 0; d < ndim; ++d)
      if (std::uniform_int_distribution<int>(0, 1)(rng)) dims.push_back(d);
    for (DType dt : dtypes) {
      std::vector<int64_t> perm(ndim);
      for (int d = 0; d < ndim; ++d) perm[d] = ndim - 1 - d;
      Tensor in = trial % 2 ? permuted_tensor(shape, perm, dt, rng) : empty(shape, dt);
      for (ReduceOp op : all_reduce_ops()) {
        if (info(op).rule == ReduceRule::floating && !is_floating(dt)) continue;
        const ReduceCase& c = reduce_case(op);
        fill_random(in, rng, is_floating(dt) ? c.lo : c.int_lo, is_floating(dt) ? c.hi : c.int_hi);
        int64_t reduced = 1;
        for (int64_t d : dims) reduced *= shape[d];
        if (!info(op).allows_empty() && reduced == 0 && in.numel() == 0 &&
            numel_of(keepdim_shape(shape, dims)) > 0) {
#ifndef NDEBUG  // kernels check their contract in debug builds only
          Tensor out = empty(keepdim_shape(shape, dims), is_index(op) ? DType::i64 : dt);
          CHECK(error_of([&] { cpu().reduce(op, out, in, dims); }).find(op_name(op)) == 0);
#endif
          continue;
        }
        check_reduce(op, in, dims, describe(op, in, dims));
      }
    }
  }
}

TEST_CASE("reduce covers the column, row and middle layouts") {
  std::mt19937 rng(2);
  for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
    Tensor x = random_tensor({5, 300, 7}, dt, rng);
    for (auto dims :
         std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}, {}})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::amax, ReduceOp::argmin})
        check_reduce(op, x, dims, describe(op, x, dims));
    Tensor near_one = random_tensor({5, 300, 7}, dt, rng, 0.99, 1.01);
    for (auto dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}})
      check_reduce(ReduceOp::prod, near_one, dims, describe(ReduceOp::prod, near_one, dims));
  }
  // Size-1 dims inside the reduced block and a broadcast (stride 0) input.
  Tensor y = random_tensor({4, 1, 6, 1, 5}, DType::f32, rng);
  check_reduce(ReduceOp::sum, y, {2, 3, 4}, "size-1 inside the block");
  check_reduce(ReduceOp::argmax, y, {1, 2}, "size-1 kept dim");
  Tensor row = random_tensor({1, 9}, DType::f32, rng);
  Tensor expanded = make_view(row, {6, 9}, {0, 1}, 0);
  check_reduce(ReduceOp::sum, expanded, {0}, "broadcast input over dim 0");
  check_reduce(ReduceOp::amax, expanded, {1}, "broadcast input over dim 1");
  check_reduce(ReduceOp::prod, expanded, {0}, "prod of a broadcast input");
}

TEST_CASE("argmax and argmin take the first index on ties; max propagates NaN") {
  Tensor x = empty({2, 5}, DType::f32);
  std::vector<double> v = {1, 3, 3, 0, 3, 2, 2, NAN, 1, NAN};
  for (int i = 0; i < 10; ++i) set(x, i, v[i]);
  Tensor arg = empty({2, 1}, DType::i64), mx = empty({2, 1}, DType::f32);
  cpu().reduce(ReduceOp::argmax, arg, x, {1});
  CHECK(values(arg) == std::vector<double>{1, 2});
  cpu().reduce(ReduceOp::argmin, arg, x, {1});
  CHECK(values(arg) == std::vector<double>{3, 2});
  cpu().reduce(ReduceOp::amax, mx, x, {1});
  CHECK(get(mx, 0) == 3);
  CHECK(std::isnan(get(mx, 1)));
}

TEST_CASE("reduce over all dims is bit-identical with 1 and 2 threads") {
  std::mt19937 rng(3);
  for (DType dt : {DType::f32, DType::f64, DType::bf16}) {
    Tensor x = random_tensor({1000003}, dt, rng, -1, 1);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::amax, ReduceOp::argmin}) {
      DType od = op == ReduceOp::argmin ? DType::i64 : dt;
      Tensor one = empty({1}, od), two = empty({1}, od);
      with_threads(1, [&] { cpu().reduce(op, one, x, {0}); });
      with_threads(2, [&] { cpu().reduce(op, two, x, {0}); });
      CHECK(std::memcmp(one.data_ptr(), two.data_ptr(), itemsize(od)) == 0);
    }
    Tensor rows = make_view(x, {3, 333334}, {333334, 1}, 0);  // 3 long rows
    Tensor one = empty({3, 1}, dt), two = empty({3, 1}, dt);
    with_threads(1, [&] { cpu().reduce(ReduceOp::sum, one, rows, {1}); });
    with_threads(2, [&] { cpu().reduce(ReduceOp::sum, two, rows, {1}); });
    CHECK(std::memcmp(one.data_ptr(), two.data_ptr(), 3 * itemsize(dt)) == 0);
    check_reduce(ReduceOp::sum, rows, {1}, "long rows");
  }
  Tensor x = random_tensor({1000003}, DType::f32, rng, 0, 1);
  check_reduce(ReduceOp::sum, x, {0}, "sum of 1e6 f32");
}

// Kernels check their contract (core/op_table.h) only in debug builds; the op layer
// rejects bad arguments in every build (tests/core/test_op_checks.cpp).
#ifndef NDEBUG
TEST_CASE("in debug builds the reduce kernel asserts its contract, naming the op") {
  Tensor x = empty({2, 3}, DType::f32), out = empty({2, 1}, DType::f32);
  CHECK(error_of([&] { cpu().reduce(ReduceOp::sum, out, x, {2}); }).find("sum: dim 2") == 0);
  CHECK(error_of([&] {
          cpu().reduce(ReduceOp::mean, out, empty({2, 3}, DType::i32), {1});
        }).find("mean") == 0);
  Tensor e = empty({2, 0}, DType::f32);
  CHECK(error_of([&] {
          cpu().reduce(ReduceOp::amax, out, e, {1});
        }).find("amax: cannot reduce an empty") == 0);
}
#endif

TEST_CASE("reduce: a sum over an empty dim is zero, a product one") {
  Tensor e = empty({2, 0}, DType::f32), s = empty({2, 1}, DType::f32);
  cpu().reduce(ReduceOp::sum, s, e, {1});
  CHECK(values(s) == std::vector<double>{0, 0});
  cpu().reduce(ReduceOp::prod, s, e, {1});
  CHECK(values(s) == std::vector<double>{1, 1});
}

TEST_CASE("prod: zeros, signs, and integers that wrap like PyTorch's") {
  Tensor x = empty({3, 4}, DType::f64);
  std::vector<double> v = {2, -3, 0.5, 4, 1, 0, 7, 9, -1, -2, -3, -4};
  for (int i = 0; i < 12; ++i) set(x, i, v[i]);
  Tensor out = empty({3, 1}, DType::f64);
  cpu().reduce(ReduceOp::prod, out, x, {1});
  CHECK(values(out) == std::vector<double>{-12, 0, 24});
  Tensor big = empty({64}, DType::i64);  // 2^64 wraps to 0
  for (int i = 0; i < 64; ++i) set(big, i, 2);
  Tensor one = empty({1}, DType::i64);
  cpu().reduce(ReduceOp::prod, one, big, {0});
  CHECK(get(one, 0) == 0);
}

}  // namespace
}  // namespace rg::test
