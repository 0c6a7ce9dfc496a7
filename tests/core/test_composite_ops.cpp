// The composite ops (ops/ops.h, "composite ops") against naive f64 loops: var/std, norm,
// tril/triu, repeat, one_hot, pad, einsum, conv2d/conv1d, pooling and batch_norm, on inputs
// that include transposed views and the argument errors that name the op.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ringgrad.h"

using namespace rg;

namespace {

Tensor rnd(const Shape& s, uint64_t seed) {
  Generator g{seed, 0};
  return randn(s, kFloat64, kCPU, &g);
}

std::vector<double> values(const Tensor& t) { return t.contiguous().to_vector<double>(); }

void check_close(const Tensor& got, const std::vector<double>& want, const Shape& shape,
                 double tol = 1e-12) {
  REQUIRE(got.shape() == shape);
  std::vector<double> v = values(got.to(kFloat64));
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    if (std::isnan(want[i]))
      CHECK(std::isnan(v[i]));
    else
      CHECK(v[i] == doctest::Approx(want[i]).epsilon(tol).scale(1));
  }
}

// x [R, C] as row-major values; reduces each row (dim 1).
std::vector<double> per_row(const Tensor& x, const std::function<double(std::vector<double>)>& f) {
  std::vector<double> v = values(x), out;
  const int64_t rows = x.size(0), cols = x.size(1);
  for (int64_t r = 0; r < rows; ++r)
    out.push_back(f(std::vector<double>(v.begin() + r * cols, v.begin() + (r + 1) * cols)));
  return out;
}

double variance(const std::vector<double>& v, double correction) {
  double m = 0, s = 0;
  for (double e : v) m += e / static_cast<double>(v.size());
  for (double e : v) s += (e - m) * (e - m);
  return s / (static_cast<double>(v.size()) - correction);
}

}  // namespace

TEST_CASE("var and std over a dim of a transposed view equal the two-pass formula") {
  Tensor x = rnd({7, 4}, 1).t();  // [4, 7], not contiguous
  for (double c : {0.0, 1.0, 2.0}) {
    check_close(var(x, {1}, c), per_row(x, [c](auto v) { return variance(v, c); }), {4});
    check_close(std_dev(x, {-1}, c, true),
                per_row(x, [c](auto v) { return std::sqrt(variance(v, c)); }), {4, 1});
  }
  std::vector<double> all = values(x);
  check_close(var(x), {variance(all, 1)}, {});
  auto [v, m] = var_mean(x, {0}, 0);
  check_close(v, per_row(x.t(), [](auto r) { return variance(r, 0); }), {7});
  check_close(m,
              per_row(x.t(),
                      [](auto r) {
                        double s = 0;
                        for (double e : r) s += e / static_cast<double>(r.size());
                        return s;
                      }),
              {7});
  CHECK(std::isnan(var(rnd({1}, 2)).item()));  // one element, unbiased: 0 / 0
}

TEST_CASE("norm for p = 2, 1, inf, -inf, 0 and 3 equals the loop") {
  Tensor x = rnd({5, 3}, 3).t();  // [3, 5]
  auto p_norm = [](double p) {
    return [p](std::vector<double> v) {
      double s = 0;
      for (double e : v) s += std::pow(std::fabs(e), p);
      return std::pow(s, 1 / p);
    };
  };
  for (double p : {1.0, 2.0, 3.0, 0.5}) check_close(norm(x, p, {1}), per_row(x, p_norm(p)), {3});
  check_close(norm(x, INFINITY, {-1}),
              per_row(x,
                      [](auto v) {
                        double m = 0;
                        for (double e : v) m = std::max(m, std::fabs(e));
                        return m;
                      }),
              {3});
  check_close(norm(x, -INFINITY, {1}, true),
              per_row(x,
                      [](auto v) {
                        double m = INFINITY;
                        for (double e : v) m = std::min(m, std::fabs(e));
                        return m;
                      }),
              {3, 1});
  Tensor with_zero = where(gt(x, scalar_tensor(0.5, kFloat64)), x, scalar_tensor(0, kFloat64));
  check_close(norm(with_zero, 0, {1}),
              per_row(with_zero,
                      [](auto v) {
                        double n = 0;
                        for (double e : v) n += e != 0;
                        return n;
                      }),
              {3});
  check_close(norm(x), {p_norm(2)(values(x))}, {});
}

TEST_CASE(
    "the gradients of the norm of a zero vector and the std of a constant are 0, as PyTorch's") {
  for (double p : {2.0, 3.0}) {
    Tensor z = zeros({4}, kFloat64).requires_grad_();
    norm(z, p).backward();
    check_close(z.grad(), {0, 0, 0, 0}, {4});
    Tensor x = tensor(std::vector<double>{3, 0, 0, 4}, {2, 2}, kFloat64).requires_grad_();
    sum(norm(x, p, {1})).backward();  // row 0 [3, 0]: |x|^(p-1) sign / norm^(p-1)
    check_close(x.grad(), {1, 0, 0, 1}, {2, 2});
  }
  Tensor constant = full({3}, 2.0, kFloat64).requires_grad_();
  std_dev(constant).backward();  // std of a constant: 0, and its gradient 0 (not nan)
  check_close(constant.grad(), {0, 0, 0}, {3});
}

TEST_CASE("tril and triu keep the band of the last two dims, for every diagonal") {
  Tensor x = rnd({2, 4, 3}, 4).transpose(1, 2);  // [2, 3, 4]
  std::vector<double> v = values(x);
  for (int64_t k : {-2, -1, 0, 1, 3}) {
    std::vector<double> lo, up;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          const double e = v[(b * 3 + i) * 4 + j];
          lo.push_back(j - i <= k ? e : 0);
          up.push_back(j - i >= k ? e : 0);
        }
    check_close(tril(x, k), lo, {2, 3, 4});
    check_close(triu(x, k), up, {2, 3, 4});
  }
  CHECK_THROWS_WITH_AS(tril(zeros({3})),
                       "tril: expected a tensor of at least 2 dims, got shape [3]", Error);
}

TEST_CASE("repeat tiles the input like torch.Tensor.repeat, with new leading dims") {
  Tensor x = rnd({3, 2}, 5).t();  // [2, 3]
  std::vector<double> v = values(x), want;
  for (int64_t a = 0; a < 2; ++a)        // new leading dim, repeated 2
    for (int64_t i = 0; i < 2 * 1; ++i)  // dim 0 repeated 1
      for (int64_t j = 0; j < 3 * 2; ++j) want.push_back(v[(i % 2) * 3 + j % 3]);
  check_close(repeat(x, {2, 1, 2}), want, {2, 2, 6});
  check_close(repeat(x, {0, 2}), {}, {0, 6});
  CHECK_THROWS_WITH_AS(repeat(x, {2}), doctest::Contains("repeat: 1 repeat counts [2]"), Error);
  check_close(repeat_interleave(tensor(std::vector<double>{1, 2}, {2}, kFloat64), 3),
              {1, 1, 1, 2, 2, 2}, {6});
  check_close(repeat_interleave(x, 2, 1),
              {v[0], v[0], v[1], v[1], v[2], v[2], v[3], v[3], v[4], v[4], v[5], v[5]}, {2, 6});
  check_close(outer(tensor(std::vector<double>{1, 2}, {2}, kFloat64),
                    tensor(std::vector<double>{3, 4, 5}, {3}, kFloat64)),
              {3, 4, 5, 6, 8, 10}, {2, 3});
}

TEST_CASE("one_hot encodes int64 indices and rejects out-of-range classes") {
  Tensor idx = tensor(std::vector<int64_t>{2, 0, 1, 2}, {2, 2});
  Tensor h = one_hot(idx);
  CHECK(h.dtype() == kInt64);
  check_close(h, {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}, {2, 2, 3});
  CHECK(one_hot(idx, 5).shape() == Shape{2, 2, 5});
  CHECK(one_hot(zeros({0}, kInt64), 4).shape() == Shape{0, 4});
  CHECK_THROWS_WITH_AS(one_hot(idx, 2), "one_hot: class value 2 is out of range for 2 classes",
                       Error);
  CHECK_THROWS_WITH_AS(one_hot(tensor(std::vector<int64_t>{-1})),
                       "one_hot: class values must be non-negative, got -1", Error);
  CHECK_THROWS_WITH_AS(one_hot(zeros({2})), "one_hot: indices must be int64, got float32", Error);
}

TEST_CASE("pad in every mode equals the index formula, and negative amounts crop") {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4}, {1, 4}, kFloat64);
  check_close(pad(x, {2, 1}, "constant", 9), {9, 9, 1, 2, 3, 4, 9}, {1, 7});
  check_close(pad(x, {3, 2}, "reflect"), {4, 3, 2, 1, 2, 3, 4, 3, 2}, {1, 9});
  check_close(pad(x, {2, 2}, "replicate"), {1, 1, 1, 2, 3, 4, 4, 4}, {1, 8});
  check_close(pad(x, {1, 3}, "circular"), {4, 1, 2, 3, 4, 1, 2, 3}, {1, 8});
  check_close(pad(x, {-1, 2}), {2, 3, 4, 0, 0}, {1, 5});
  check_close(pad(x, {0, 0, 1, 0}), {0, 0, 0, 0, 1, 2, 3, 4}, {2, 4});
  CHECK_THROWS_WITH_AS(pad(x, {4, 0}, "reflect"),
                       "pad: mode 'reflect' needs padding 4 < the size 4 of dim 1", Error);
  CHECK_THROWS_WITH_AS(
      pad(x, {1}), "pad: padding [1] must have an even length ((before, after) per dim)", Error);
  CHECK_THROWS_WITH_AS(pad(x, {1, 1}, "wrap"), doctest::Contains("pad: mode 'wrap' is not one of"),
                       Error);
}

TEST_CASE("einsum equals matmul, outer, sums and loops for the common equations") {
  Tensor a = rnd({3, 4}, 6), b = rnd({5, 4}, 7).t(), c = rnd({5, 2}, 8);
  auto same = [](const Tensor& got, const Tensor& want) {
    check_close(got, values(want), want.shape(), 1e-10);
  };
  same(einsum("ij,jk->ik", {a, b}), matmul(a, b));
  same(einsum("ij,jk", {a, b}), matmul(a, b));  // implicit output: i, k
  same(einsum("ij,jk,kl->il", {a, b, c}), matmul(matmul(a, b), c));
  same(einsum("ij->ji", {a}), a.t());
  same(einsum("ij->", {a}), sum(a));
  same(einsum("ij->j", {a}), sum(a, {0}));
  same(einsum("i,j->ij", {a.select(0, 0), c.select(1, 1)}), outer(a.select(0, 0), c.select(1, 1)));
  same(einsum("ij,ij->i", {a, a}), sum(mul(a, a), {1}));
  Tensor q = rnd({2, 3, 4, 5}, 9), k = rnd({2, 3, 6, 5}, 10);
  same(einsum("bhqd,bhkd->bhqk", {q, k}), matmul(q, k.transpose(-1, -2)));
  same(einsum("bhqd, bhkd -> bhkq", {q, k}), matmul(q, k.transpose(-1, -2)).transpose(-1, -2));
  same(einsum("...ij,...jk->...ik", {q, k.transpose(-1, -2)}), matmul(q, k.transpose(-1, -2)));
  same(einsum("...ij,jk", {q, rnd({5, 2}, 11)}), matmul(q, rnd({5, 2}, 11)));
  same(einsum("bij,bjk->bik", {rnd({1, 3, 4}, 12), rnd({2, 4, 2}, 13)}),
       matmul(rnd({1, 3, 4}, 12), rnd({2, 4, 2}, 13)));  // a batch size of 1 broadcasts
  CHECK_THROWS_WITH_AS(
      einsum("ii->i", {rnd({3, 3}, 1)}),
      "einsum: subscript 'i' repeated in operand 0 ('ii'): diagonals are not supported", Error);
  CHECK_THROWS_WITH_AS(einsum("ij,jk->ik", {a, a}),
                       "einsum: subscript 'j' has sizes 4 and 3 in 'ij,jk->ik'", Error);
  CHECK_THROWS_WITH_AS(einsum("ij->k", {a}),
                       "einsum: output subscript 'k' appears in no operand of 'ij->k'", Error);
  CHECK_THROWS_WITH_AS(einsum("ijk->i", {a}),
                       doctest::Contains("einsum: subscript 'ijk' of operand 0"), Error);
  CHECK_THROWS_WITH_AS(einsum("ij,jk->ik", {a}), "einsum: 'ij,jk->ik' names 2 operands, got 1",
                       Error);
  CHECK_THROWS_WITH_AS(einsum("ij,jk->ik", {a, b.to(kFloat32)}),
                       "einsum: expected floating-point operands of one dtype, got float64 and "
                       "float32",
                       Error);
}

namespace {

// conv2d by its definition: out[n, o, y, x] = bias[o] + sum over the group's channels c and
// taps (i, j) of w[o, c, i, j] * x[n, g*C/G + c, y*s - p + i*d, x*s - p + j*d] (0 outside).
std::vector<double> conv2d_loop(const Tensor& x, const Tensor& w, const Tensor& bias, Pair s,
                                Pair p, Pair d, int64_t groups, Shape& shape) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t o = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3);
  const int64_t ho = (h + 2 * p[0] - d[0] * (kh - 1) - 1) / s[0] + 1;
  const int64_t wo = (wd + 2 * p[1] - d[1] * (kw - 1) - 1) / s[1] + 1;
  shape = {n, o, ho, wo};
  std::vector<double> xv = values(x), wv = values(w), out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t z = 0; z < wo; ++z) {
          double acc = bias.defined() ? bias.to_vector<double>()[oc] : 0;
          const int64_t g = oc / (o / groups);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t yy = y * s[0] - p[0] + i * d[0], zz = z * s[1] - p[1] + j * d[1];
                if (yy < 0 || yy >= h || zz < 0 || zz >= wd) continue;
                acc += wv[((oc * cg + ci) * kh + i) * kw + j] *
                       xv[((b * c + g * cg + ci) * h + yy) * wd + zz];
              }
          out.push_back(acc);
        }
  (void)c;
  return out;
}

}  // namespace

TEST_CASE("conv2d equals the direct loop for strides, paddings, dilations and groups") {
  struct Case {
    Shape x, w;
    Pair s, p, d;
    int64_t groups;
  };
  const Case cases[] = {{{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
                        {{1, 2, 8, 9}, {3, 2, 3, 2}, {2, 3}, {1, 2}, {1, 1}, 1},
                        {{2, 4, 9, 9}, {6, 2, 3, 3}, {1, 2}, {2, 1}, {2, 3}, 2},
                        {{1, 4, 5, 5}, {4, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 4},
                        {{1, 3, 4, 4}, {2, 3, 4, 4}, {1, 1}, {0, 0}, {1, 1}, 1}};
  uint64_t seed = 20;
  for (const Case& t : cases) {
    Tensor x = rnd(t.x, seed++), w = rnd(t.w, seed++), bias = rnd({t.w[0]}, seed++);
    Shape shape;
    std::vector<double> want = conv2d_loop(x, w, bias, t.s, t.p, t.d, t.groups, shape);
    check_close(conv2d(x, w, bias, t.s, t.p, t.d, t.groups), want, shape, 1e-10);
  }
  Tensor x = rnd({2, 5, 4}, 40).transpose(1, 2), w = rnd({3, 4, 2}, 41);  // x [2, 4, 5]
  Shape shape;
  std::vector<double> want =
      conv2d_loop(x.unsqueeze(2), w.unsqueeze(2), Tensor(), {1, 2}, {0, 1}, {1, 2}, 1, shape);
  check_close(conv1d(x, w, Tensor(), 2, 1, 2), want, {2, 3, shape[3]}, 1e-10);
  CHECK_THROWS_WITH_AS(conv2d(rnd({1, 3, 5, 5}, 1), rnd({2, 2, 3, 3}, 2)),
                       doctest::Contains("conv2d: input of shape [1,3,5,5] has 3 channels"), Error);
  CHECK_THROWS_WITH_AS(conv2d(rnd({1, 2, 2, 2}, 1), rnd({2, 2, 3, 3}, 2)),
                       doctest::Contains("conv2d: input of shape [1,2,2,2] is too small"), Error);
  CHECK_THROWS_WITH_AS(conv2d(rnd({1, 2, 5, 5}, 1), rnd({2, 2, 3, 3}, 2), Tensor(), {0, 1}),
                       "conv2d: stride must be >= 1, got (0, 1)", Error);
  CHECK_THROWS_WITH_AS(conv2d(rnd({1, 2, 5, 5}, 1), zeros({2, 2, 3, 3})),
                       "conv2d: expected floating-point input and weight of one dtype, got float64 "
                       "and float32",
                       Error);
}

TEST_CASE("max_pool2d and avg_pool2d equal the window loops, with padding and ceil mode") {
  Tensor x = rnd({1, 2, 5, 6}, 50).transpose(2, 3);  // [1, 2, 6, 5]
  std::vector<double> v = values(x);
  struct Case {
    Pair k, s, p;
    bool ceil, include_pad;
  };
  for (const Case& t :
       {Case{{2, 2}, {2, 2}, {0, 0}, false, true}, Case{{3, 2}, {2, 1}, {1, 1}, false, true},
        Case{{3, 3}, {2, 2}, {1, 1}, true, false}, Case{{2, 3}, {2, 2}, {1, 0}, true, true}}) {
    Tensor mx = max_pool2d(x, t.k, t.s, t.p, {1, 1}, t.ceil);
    Tensor av = avg_pool2d(x, t.k, t.s, t.p, t.ceil, t.include_pad);
    const int64_t ho = mx.size(2), wo = mx.size(3);
    std::vector<double> want_max, want_avg;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t z = 0; z < wo; ++z) {
          double m = -INFINITY, s = 0, inside = 0, padded = 0;
          for (int64_t i = 0; i < t.k[0]; ++i)
            for (int64_t j = 0; j < t.k[1]; ++j) {
              const int64_t yy = y * t.s[0] - t.p[0] + i, zz = z * t.s[1] - t.p[1] + j;
              if (yy < 6 + t.p[0] && zz < 5 + t.p[1]) ++padded;
              if (yy < 0 || yy >= 6 || zz < 0 || zz >= 5) continue;
              m = std::max(m, v[(c * 6 + yy) * 5 + zz]);
              s += v[(c * 6 + yy) * 5 + zz];
              ++inside;
            }
          want_max.push_back(m);
          want_avg.push_back(s / (t.include_pad ? padded : inside));
        }
    const int64_t want_ho = t.ceil ? (6 + 2 * t.p[0] - t.k[0] + t.s[0] - 1) / t.s[0] + 1
                                   : (6 + 2 * t.p[0] - t.k[0]) / t.s[0] + 1;
    CHECK(ho == want_ho - (t.ceil && (want_ho - 1) * t.s[0] >= 6 + t.p[0] ? 1 : 0));
    check_close(mx, want_max, {1, 2, ho, wo});
    check_close(av, want_avg, {1, 2, ho, wo});
  }
  // ties (a ReLU's zeros): the first largest element of each window gets the whole gradient
  Tensor tied = zeros({1, 1, 2, 4}, kFloat64).requires_grad_();
  sum(max_pool2d(tied, {2, 2})).backward();
  check_close(tied.grad(), {1, 0, 1, 0, 0, 0, 0, 0}, {1, 1, 2, 4});
  CHECK(std::isnan(max_pool2d(full({1, 1, 2, 2}, NAN, kFloat64), {2, 2}).item()));
  CHECK_THROWS_WITH_AS(max_pool2d(x, {2, 2}, {2, 2}, {2, 0}),
                       "max_pool2d: padding (2, 0) must be at most half the kernel size (2, 2)",
                       Error);
}

TEST_CASE("adaptive_avg_pool2d averages PyTorch's windows, also when they overlap") {
  Tensor x = rnd({1, 2, 7, 5}, 55).transpose(2, 3).contiguous().transpose(2, 3);  // a view
  std::vector<double> v = values(x), want;
  const int64_t oh = 3, ow = 2;  // windows of H = 7: [0, 3), [2, 5), [4, 7); W = 5: [0, 3), [2, 5)
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = i * 7 / oh, h1 = ((i + 1) * 7 + oh - 1) / oh;
        const int64_t w0 = j * 5 / ow, w1 = ((j + 1) * 5 + ow - 1) / ow;
        double s = 0;
        for (int64_t y = h0; y < h1; ++y)
          for (int64_t z = w0; z < w1; ++z) s += v[(c * 7 + y) * 5 + z];
        want.push_back(s / static_cast<double>((h1 - h0) * (w1 - w0)));
      }
  check_close(adaptive_avg_pool2d(x, {oh, ow}), want, {1, 2, oh, ow});
  check_close(adaptive_avg_pool2d(x.select(0, 0), {1, 1}),
              {mean(x.select(1, 0)).item(), mean(x.select(1, 1)).item()}, {2, 1, 1});
  CHECK_THROWS_WITH_AS(adaptive_avg_pool2d(x, {0, 2}),
                       "adaptive_avg_pool2d: output_size must be >= 1, got (0, 2)", Error);
}

TEST_CASE("batch_norm normalizes per channel and updates the running stats as PyTorch") {
  Tensor x = rnd({4, 3, 5}, 60).transpose(0, 2).transpose(0, 2);  // a view, contiguous layout
  Tensor weight = rnd({3}, 61), bias = rnd({3}, 62);
  Tensor running_mean = zeros({3}, kFloat64), running_var = ones({3}, kFloat64);
  Tensor y = batch_norm(x, running_mean, running_var, weight, bias, true, 0.1, 1e-5);
  std::vector<double> v = values(x), w = values(weight), b = values(bias);
  std::vector<double> want(v.size()), want_mean, want_var;
  for (int64_t c = 0; c < 3; ++c) {
    std::vector<double> channel;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t l = 0; l < 5; ++l) channel.push_back(v[(n * 3 + c) * 5 + l]);
    double m = 0;
    for (double e : channel) m += e / 20;
    const double biased = variance(channel, 0);
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t l = 0; l < 5; ++l) {
        const int64_t i = (n * 3 + c) * 5 + l;
        want[i] = (v[i] - m) / std::sqrt(biased + 1e-5) * w[c] + b[c];
      }
    want_mean.push_back(0.1 * m);
    want_var.push_back(0.9 + 0.1 * variance(channel, 1));
  }
  check_close(y, want, {4, 3, 5}, 1e-10);
  check_close(running_mean, want_mean, {3});
  check_close(running_var, want_var, {3});
  Tensor eval = batch_norm(x, running_mean, running_var, Tensor(), Tensor(), false);
  std::vector<double> rm = values(running_mean), rv = values(running_var), want_eval;
  for (int64_t i = 0; i < 60; ++i) {
    const int64_t c = (i / 5) % 3;
    want_eval.push_back((v[i] - rm[c]) / std::sqrt(rv[c] + 1e-5));
  }
  check_close(eval, want_eval, {4, 3, 5}, 1e-10);
  CHECK_THROWS_WITH_AS(batch_norm(rnd({1, 3}, 1), Tensor(), Tensor(), Tensor(), Tensor(), true),
                       doctest::Contains("batch_norm: expected more than 1 value per channel"),
                       Error);
  CHECK_THROWS_WITH_AS(batch_norm(x, zeros({2}, kFloat64), ones({3}, kFloat64)),
                       "batch_norm: running_mean must have shape [3], got [2]", Error);
}
