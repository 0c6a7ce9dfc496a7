// Every op against a naive reference loop in f64, on random shapes with broadcasting,
// non-contiguous views, empty tensors and size-1 dims.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <thread>

#include "ringgrad.h"

using namespace rg;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, DType dt = kFloat32) {
  Generator g{seed, 0};
  return randn(s, dt, kCPU, &g);
}

// Row-major multi-index helpers for reference loops.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] ? i % s[d] : 0;
    if (s[d]) i /= s[d];
  }
  return idx;
}
int64_t ravel_broadcast(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t off = 0, lead = idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) off = off * s[d] + (s[d] == 1 ? 0 : idx[d + lead]);
  return off;
}

void check_binary(const char* name, std::function<Tensor(Tensor, Tensor)> op,
                  std::function<double(double, double)> ref, const Shape& sa, const Shape& sb,
                  bool positive_b = false) {
  Tensor a = rnd(sa, 1), b = rnd(sb, 2);
  if (positive_b) b = abs(b) + 0.5;
  Tensor out = op(a, b);
  Shape so = broadcast_shapes(sa, sb, name);
  REQUIRE(out.shape() == so);
  auto va = a.to_vector<double>(), vb = b.to_vector<double>(), vo = out.to_vector<double>();
  for (int64_t i = 0; i < numel_of(so); ++i) {
    auto idx = unravel(i, so);
    double expected = ref(va[ravel_broadcast(idx, sa)], vb[ravel_broadcast(idx, sb)]);
    INFO(name << " " << shape_str(sa) << " x " << shape_str(sb) << " at " << i);
    CHECK(vo[i] == doctest::Approx(expected).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("binary ops match the f64 reference under broadcasting") {
  std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 1, 5}, {3, 1}}, {{1}, {7}}, {{0, 3}, {3}}, {{}, {2, 2}}};
  for (auto& [sa, sb] : shapes) {
    check_binary("add", [](Tensor a, Tensor b) { return a + b; }, [](double x, double y) { return x + y; }, sa, sb);
    check_binary("sub", [](Tensor a, Tensor b) { return a - b; }, [](double x, double y) { return x - y; }, sa, sb);
    check_binary("mul", [](Tensor a, Tensor b) { return a * b; }, [](double x, double y) { return x * y; }, sa, sb);
    check_binary("div", [](Tensor a, Tensor b) { return a / b; }, [](double x, double y) { return x / y; }, sa, sb, true);
    check_binary("pow", [](Tensor a, Tensor b) { return pow(abs(a), b); },
                 [](double x, double y) { return std::pow(std::abs(x), y); }, sa, sb);
    check_binary("maximum", [](Tensor a, Tensor b) { return maximum(a, b); },
                 [](double x, double y) { return std::max(x, y); }, sa, sb);
    check_binary("lt", [](Tensor a, Tensor b) { return lt(a, b); }, [](double x, double y) { return double(x < y); }, sa, sb);
  }
}

TEST_CASE("unary ops match the f64 reference on non-contiguous views") {
  Tensor base = rnd({5, 7}, 3);
  Tensor x = base.t().slice(0, 1, 7, 2);  // [3, 5], strided both ways
  auto vx = x.to_vector<double>();
  struct Case { const char* name; std::function<Tensor(Tensor)> op; std::function<double(double)> ref; };
  std::vector<Case> cases = {
      {"neg", [](Tensor t) { return -t; }, [](double v) { return -v; }},
      {"exp", [](Tensor t) { return exp(t); }, [](double v) { return std::exp(v); }},
      {"abs", [](Tensor t) { return abs(t); }, [](double v) { return std::abs(v); }},
      {"tanh", [](Tensor t) { return tanh(t); }, [](double v) { return std::tanh(v); }},
      {"sigmoid", [](Tensor t) { return sigmoid(t); }, [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"relu", [](Tensor t) { return relu(t); }, [](double v) { return v > 0 ? v : 0; }},
      {"gelu", [](Tensor t) { return gelu(t); },
       [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }},
      {"sin", [](Tensor t) { return sin(t); }, [](double v) { return std::sin(v); }},
      {"square", [](Tensor t) { return square(t); }, [](double v) { return v * v; }},
      {"log", [](Tensor t) { return log(abs(t) + 0.1); }, [](double v) { return std::log(std::abs(v) + 0.1); }},
      {"sqrt", [](Tensor t) { return sqrt(abs(t)); }, [](double v) { return std::sqrt(std::abs(v)); }},
  };
  for (auto& c : cases) {
    auto vo = c.op(x).to_vector<double>();
    for (size_t i = 0; i < vx.size(); ++i) {
      INFO(c.name << " at " << i);
      CHECK(vo[i] == doctest::Approx(c.ref(vx[i])).epsilon(1e-5));
    }
  }
}

TEST_CASE("reductions match the f64 reference, with keepdim and negative dims") {
  Tensor x = rnd({4, 5, 6}, 4).permute({2, 0, 1});  // [6,4,5] non-contiguous
  auto v = x.to_vector<double>();
  Tensor s = sum(x, {-1});
  Tensor m = mean(x, {0, 2}, true);
  Tensor mx = amax(x, {1});
  Tensor am = argmax(x, 2);
  CHECK(s.shape() == Shape{6, 4});
  CHECK(m.shape() == Shape{1, 4, 1});
  auto vs = s.to_vector<double>(), vm = m.to_vector<double>(), vmx = mx.to_vector<double>();
  auto vam = am.to_vector<int64_t>();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0, best = -1e300;
      int64_t arg = 0;
      for (int k = 0; k < 5; ++k) {
        double e = v[(i * 4 + j) * 5 + k];
        acc += e;
        if (e > best) best = e, arg = k;
      }
      CHECK(vs[i * 4 + j] == doctest::Approx(acc).epsilon(1e-5));
      CHECK(vam[i * 4 + j] == arg);
    }
  for (int j = 0; j < 4; ++j) {
    double acc = 0;
    for (int i = 0; i < 6; ++i)
      for (int k = 0; k < 5; ++k) acc += v[(i * 4 + j) * 5 + k];
    CHECK(vm[j] == doctest::Approx(acc / 30).epsilon(1e-5));
  }
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 5; ++k) {
      double best = -1e300;
      for (int j = 0; j < 4; ++j) best = std::max(best, v[(i * 4 + j) * 5 + k]);
      CHECK(vmx[i * 5 + k] == doctest::Approx(best));
    }
  CHECK(sum(zeros({0, 3})).item() == 0);
  CHECK(sum(ones({3}, kInt32)).dtype() == kInt64);
  CHECK_THROWS_WITH_AS(amax(zeros({0, 3}), {0}), doctest::Contains("amax: cannot reduce over dim 0 of size 0"), Error);
}

TEST_CASE("matmul matches the f64 reference for 2-D, batched, broadcast and transposed inputs") {
  auto ref = [](const Tensor& a, const Tensor& b) {
    // a [B,M,K], b [B,K,N] contiguous f64 copies
    auto va = a.to_vector<double>(), vb = b.to_vector<double>();
    int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
    std::vector<double> out(B * M * N, 0);
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k)
            out[(bi * M + i) * N + j] += va[(bi * M + i) * K + k] * vb[(bi * K + k) * N + j];
    return out;
  };
  for (auto [M, K, N] : std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {3, 5, 2}, {17, 33, 9}, {64, 31, 65}}) {
    Tensor a = rnd({M, K}, 5), b = rnd({K, N}, 6);
    auto expected = ref(a.unsqueeze(0), b.unsqueeze(0));
    CHECK(allclose(matmul(a, b), tensor(expected, {M, N}), 1e-4, 1e-4));
    Tensor at = rnd({K, M}, 7).t();  // transposed view
    auto expected_t = ref(at.contiguous().unsqueeze(0), b.unsqueeze(0));
    CHECK(allclose(matmul(at, b), tensor(expected_t, {M, N}), 1e-4, 1e-4));
  }
  Tensor a = rnd({2, 1, 3, 4}, 8), b = rnd({5, 4, 2}, 9);
  Tensor c = matmul(a, b);
  CHECK(c.shape() == Shape{2, 5, 3, 2});
  Tensor c00 = c.select(0, 1).select(0, 3);
  auto e = ref(a.select(0, 1).contiguous(), b.select(0, 3).unsqueeze(0).contiguous());
  CHECK(allclose(c00, tensor(e, {3, 2}), 1e-4, 1e-4));
  CHECK(matmul(zeros({3, 0}), zeros({0, 2})).to_vector<float>() == std::vector<float>(6, 0));
}

TEST_CASE("softmax, log_softmax, layer_norm, cross_entropy match their definitions") {
  Tensor x = rnd({3, 5}, 10, kFloat64);
  Tensor sm = softmax(x, 1);
  Tensor expected = exp(x) / sum(exp(x), {1}, true);
  CHECK(allclose(sm, expected, 1e-12, 1e-12));
  CHECK(allclose(log_softmax(x, 0), log(softmax(x, 0)), 1e-12, 1e-12));
  Tensor w = rnd({5}, 11, kFloat64), b = rnd({5}, 12, kFloat64);
  Tensor ln = layer_norm(x, {5}, w, b);
  Tensor mu = mean(x, {1}, true);
  Tensor var = mean(square(x - mu), {1}, true);
  CHECK(allclose(ln, (x - mu) / sqrt(var + 1e-5) * w + b, 1e-10, 1e-10));
  Tensor targets = tensor(std::vector<int64_t>{4, -100, 1});
  Tensor ce = cross_entropy(x, targets);
  auto lsm = log_softmax(x, 1).to_vector<double>();
  CHECK(ce.item() == doctest::Approx(-(lsm[4] + lsm[10 + 1]) / 2).epsilon(1e-12));
  Tensor ce_none = cross_entropy(x, targets, Reduction::none);
  CHECK(ce_none.to_vector<double>()[1] == 0);
  CHECK_THROWS_WITH_AS(cross_entropy(x, tensor(std::vector<int64_t>{0, 7, 1})),
                       doctest::Contains("7"), Error);
}

TEST_CASE("embedding gathers rows; cat and split round-trip; where selects") {
  Tensor w = arange(0, 12, 1).reshape({4, 3});
  Tensor e = embedding(w, tensor(std::vector<int64_t>{3, 0, 3}, {3}));
  CHECK(e.to_vector<float>() == std::vector<float>{9, 10, 11, 0, 1, 2, 9, 10, 11});
  Tensor a = rnd({2, 3}, 13), b = rnd({2, 2}, 14);
  Tensor c = cat({a, b}, 1);
  auto parts = split(c, 3, 1);
  CHECK(equal(parts[0].contiguous(), a));
  CHECK(equal(parts[1].contiguous(), b));
  Tensor m = where(gt(a, zeros({})), a, zeros({}));
  CHECK(equal(m, relu(a)));
}

TEST_CASE("in-place ops bump the version counter and respect views") {
  Tensor x = zeros({2, 3});
  uint64_t v0 = x.version();
  x.narrow(1, 1, 1).fill_(5);
  CHECK(x.version() > v0);
  x.add_(ones({3}));
  CHECK(x.to_vector<float>() == std::vector<float>{1, 6, 1, 1, 6, 1});
  x.mul_(2.0);
  CHECK(x.to_vector<float>()[1] == 12);
}

TEST_CASE("ops are safe to call from several threads at once") {
  std::vector<std::thread> threads;
  std::vector<double> results(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &results] {
      Tensor a = rnd({64, 64}, 100 + t);
      Tensor w = rnd({64, 64}, 200).requires_grad_();
      for (int i = 0; i < 10; ++i) {
        Tensor loss = sum(gelu(matmul(a, w)));
        loss.backward();
      }
      results[t] = w.grad().sum().item();
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    Tensor a = rnd({64, 64}, 100 + t);
    Tensor w = rnd({64, 64}, 200).requires_grad_();
    for (int i = 0; i < 10; ++i) sum(gelu(matmul(a, w))).backward();
    CHECK(results[t] == doctest::Approx(w.grad().sum().item()).epsilon(1e-6));
  }
}
