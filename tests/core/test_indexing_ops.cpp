// gather, scatter, index_select/add/put, cumsum, sort, topk and max/min along a dim against
// naive f64 loops, on non-contiguous (transposed) inputs and negative dims; and each bad
// argument's error, naming the op.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ringgrad.h"

using namespace rg;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, DType dt = kFloat64) {
  Generator g{seed, 0};
  return randn(s, dt, kCPU, &g);
}

// Row-major values of any cpu tensor, as double.
std::vector<double> vals(const Tensor& t) {
  Tensor c = contiguous(t.to(kFloat64));
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

// Random int64 indices in [0, size).
Tensor random_index(const Shape& s, int64_t size, uint64_t seed) {
  Generator g{seed, 0};
  std::vector<double> u = vals(rand(s, kFloat64, kCPU, &g));
  std::vector<int64_t> out;
  for (double v : u) out.push_back(std::min<int64_t>(size - 1, int64_t(v * double(size))));
  return tensor(out, s);
}

// The row-major offset of multi-index idx in shape s.
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t off = 0;
  for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + idx[d];
  return off;
}
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

}  // namespace

TEST_CASE("gather and scatter_add match f64 loops along every dim of a transposed input") {
  Tensor x = rnd({6, 5, 4}, 1).transpose(0, 2);  // [4, 5, 6], non-contiguous
  const std::vector<double> xv = vals(x);
  for (int64_t dim : {0, 1, 2, -1}) {
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Shape ishape = {3, 4, 5};
    ishape[d] = 7;
    Tensor index = random_index(ishape, x.size(d), 10 + d);
    const std::vector<double> iv = vals(index);
    std::vector<double> gv = vals(gather(x, dim, index));
    Tensor src = rnd(ishape, 20 + d);
    std::vector<double> sv = vals(src), want_add = xv, want_put = xv;
    for (int64_t p = 0; p < index.numel(); ++p) {
      std::vector<int64_t> at = unravel(p, ishape);
      at[d] = int64_t(iv[p]);
      CHECK(gv[p] == xv[ravel(at, x.shape())]);
      want_add[ravel(at, x.shape())] += sv[p];
      want_put[ravel(at, x.shape())] = sv[p];  // in order: the last write wins
    }
    CHECK(vals(scatter_add(x, dim, index, src)) == want_add);
    CHECK(vals(scatter(x, dim, index, src)) == want_put);
  }
}

TEST_CASE("index_select, index_add, index_put and take_along_dim match f64 loops") {
  Tensor x = rnd({5, 4}, 2).t();  // [4, 5]
  Tensor idx = tensor(std::vector<int64_t>{4, 0, 4, 2});
  std::vector<double> xv = vals(x), sel = vals(index_select(x, 1, idx));
  Tensor src = rnd({4, 4}, 3);
  std::vector<double> sv = vals(src), add = xv, put = xv;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t k = 0; k < 4; ++k) {
      const int64_t c = std::vector<int64_t>{4, 0, 4, 2}[k];
      CHECK(sel[r * 4 + k] == xv[r * 5 + c]);
      add[r * 5 + c] += 2 * sv[r * 4 + k];
      put[r * 5 + c] = sv[r * 4 + k];
    }
  CHECK(vals(index_add(x, -1, idx, src, 2.0)) == add);
  CHECK(vals(index_put(x, 1, idx, src)) == put);
  CHECK(vals(index_put(x, 0, tensor(std::vector<int64_t>{1}), full({1}, 7.0, kFloat64))) == [&] {
    std::vector<double> w = xv;
    for (int64_t c = 0; c < 5; ++c) w[5 + c] = 7;
    return w;
  }());
  Tensor ind = tensor(std::vector<int64_t>{2, 0}, {1, 2});  // broadcast over x's 4 rows
  std::vector<double> t = vals(take_along_dim(x, ind, 1));
  for (int64_t r = 0; r < 4; ++r) CHECK((t[r * 2] == xv[r * 5 + 2] && t[r * 2 + 1] == xv[r * 5]));
}

TEST_CASE("cumsum equals a sequential f64 sum, rounded once per element") {
  Tensor x = rnd({7, 300}, 4, kFloat32).t();  // [300, 7]
  std::vector<double> xv = vals(x), got = vals(cumsum(x, 0));
  for (int64_t c = 0; c < 7; ++c) {
    double acc = 0;
    for (int64_t r = 0; r < 300; ++r) {
      acc += xv[r * 7 + c];
      CHECK(got[r * 7 + c] == double(float(acc)));
    }
  }
  Tensor b = tensor(std::vector<double>{1, 0, 1, 1}, {4}, kBool);
  Tensor cb = cumsum(b, -1);
  CHECK(cb.dtype() == kInt64);
  CHECK(vals(cb) == std::vector<double>{1, 1, 2, 3});
  CHECK(cumsum(zeros({0, 3}), 0).shape() == Shape{0, 3});
}

TEST_CASE("sort is stable, puts NaN last (first descending) and topk cuts it") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor(std::vector<double>{3, nan, 1, 3, -2, 1}, {6}, kFloat64);
  auto [v, i] = sort(x);
  CHECK(vals(i) == std::vector<double>{4, 2, 5, 0, 3, 1});
  auto [vd, id] = sort(x, 0, true);
  CHECK(vals(id) == std::vector<double>{1, 0, 3, 2, 5, 4});
  CHECK(std::isnan(vals(vd)[0]));
  Tensor m = rnd({9, 4}, 5).t();  // [4, 9]
  auto [tv, ti] = topk(m, 3, 1);
  std::vector<double> mv = vals(m), tvv = vals(tv), tiv = vals(ti);
  for (int64_t r = 0; r < 4; ++r) {
    std::vector<double> row(mv.begin() + r * 9, mv.begin() + r * 9 + 9);
    std::vector<int64_t> order(9);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t k = 0; k < 3; ++k) {
      CHECK(tiv[r * 3 + k] == order[k]);
      CHECK(tvv[r * 3 + k] == row[order[k]]);
    }
  }
  CHECK(vals(argsort(m, 1)) == vals(sort(m, -1).indices));
  auto [sl, il] = topk(m, 2, 0, false);
  CHECK(sl.shape() == Shape{2, 9});
}

TEST_CASE("max and min along a dim give the first index of ties, and NaN wins") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor(std::vector<double>{1, 5, 5, 2, 0, nan, 0, 3}, {2, 4}, kFloat64);
  auto [v, i] = max(x, 1);
  CHECK(vals(i) == std::vector<double>{1, 1});
  CHECK(vals(v)[0] == 5);
  CHECK(std::isnan(vals(v)[1]));
  auto [mv, mi] = min(x, -1, true);
  CHECK(mi.shape() == Shape{2, 1});
  CHECK(vals(mi) == std::vector<double>{0, 1});
  CHECK(vals(max(tensor(std::vector<double>{1, 4, 2}, {3}, kFloat64))) == std::vector<double>{4});
}

TEST_CASE("indexing ops reject bad arguments naming the op") {
  Tensor x = rnd({3, 4}, 6);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([&] {
          gather(x, 1, tensor(std::vector<int64_t>{0, 4}, {1, 2}));
        }) == "gather: index 4 out of range for dim 1 of size 4");
  CHECK(message([&] {
          gather(x, 1, zeros({3, 1}));
        }) == "gather: index must be int64 or int32, got float32");
  CHECK(message([&] {
          gather(x, 2, tensor(std::vector<int64_t>{0}, {1, 1}));
        }).find("gather: dim 2 out of range") == 0);
  CHECK(message([&] { gather(x, 0, tensor(std::vector<int64_t>{0}, {1})); }) ==
        "gather: index [1] must have as many dims as the input [3,4]");
  CHECK(message([&] {
          scatter(x, 0, tensor(std::vector<int64_t>{0}, {1, 1}), zeros({1, 1}, kFloat32));
        }).find("scatter: src (float32) must have the input's dtype float64") == 0);
  CHECK(message([&] { topk(x, 5, 1); }) == "topk: k 5 out of range for dim 1 of size 4");
  CHECK(message([&] { index_select(x, 0, tensor(std::vector<int64_t>{-1})); }) ==
        "gather: index -1 out of range for dim 0 of size 3");
}
