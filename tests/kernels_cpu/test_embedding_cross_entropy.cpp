#include "tests/kernels_cpu/helpers.h"

namespace rg::test {
namespace {

Tensor index_tensor(const std::vector<int64_t>& idx, DType dt) {
  Tensor t = empty({int64_t(idx.size())}, dt);
  for (size_t i = 0; i < idx.size(); ++i) set(t, i, double(idx[i]));
  return t;
}

TEST_CASE("embedding gathers rows and its backward scatter-adds repeated indices") {
  std::mt19937 rng(10);
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (DType it : {DType::i64, DType::i32})
      for (int64_t n : {0, 1, 7, 300}) {
        int64_t vocab = 11, d = 5 + n % 4;
        std::vector<int64_t> idx(n);
        for (auto& v : idx) v = std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng);
        Tensor indices = index_tensor(idx, it);
        Tensor weight = n % 2 ? permuted_tensor({vocab, d}, {1, 0}, dt, rng)
                              : random_tensor({vocab, d}, dt, rng);
        Tensor out = empty({n, d}, dt);
        cpu().embedding(out, weight, indices);
        std::vector<double> vw = values(weight), want(n * d);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < d; ++j) want[r * d + j] = vw[idx[r] * d + j];
        check_close(values(out), want, 0, "embedding");

        Tensor go = random_tensor({n, d}, dt, rng), gw = random_tensor({vocab, d}, dt, rng);
        std::vector<double> expect = values(gw), vgo = values(go);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < d; ++j) expect[idx[r] * d + j] += vgo[r * d + j];
        cpu().embedding_backward(gw, go, indices);
        check_close(values(gw), expect, dt == DType::bf16 ? 2e-2 : tolerance(dt) * 10,
                    "embedding_backward " + std::string(dtype_name(dt)), 1);
      }
}

TEST_CASE("embedding and cross_entropy reject out-of-range indices, naming them") {
  Tensor weight = empty({4, 3}), out = empty({2, 3});
  std::string e = error_of([&] { cpu().embedding(out, weight, index_tensor({1, 4}, DType::i64)); });
  CHECK(e == "embedding: index 4 out of range for vocab size 4");
  e = error_of([&] { cpu().embedding_backward(weight, out, index_tensor({-1, 0}, DType::i32)); });
  CHECK(e == "embedding_backward: index -1 out of range for vocab size 4");
  Tensor logits = empty({2, 3}), loss = empty({2});
  e = error_of([&] { cpu().cross_entropy(loss, logits, index_tensor({0, 3}, DType::i64), -100); });
  CHECK(e == "cross_entropy: target 3 out of range for 3 classes");
  e = error_of([&] {
    cpu().cross_entropy_backward(logits, logits, index_tensor({5, 0}, DType::i64), loss, -100);
  });
  CHECK(e.find("cross_entropy_backward: target 5") == 0);
}

TEST_CASE("cross_entropy forward and backward match an f64 reference; ignored rows are zero") {
  std::mt19937 rng(11);
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (int64_t n : {0, 1, 6, 50})
      for (int64_t c : {1, 3, 1000}) {
        std::string what =
            "cross_entropy [" + std::to_string(n) + "," + std::to_string(c) + "] " + dtype_name(dt);
        std::vector<int64_t> t(n);
        for (int64_t r = 0; r < n; ++r)
          t[r] = r % 4 == 3 ? -100 : std::uniform_int_distribution<int64_t>(0, c - 1)(rng);
        Tensor targets = index_tensor(t, n % 2 ? DType::i32 : DType::i64);
        Tensor logits = c == 3 ? permuted_tensor({n, c}, {1, 0}, dt, rng)
                               : random_tensor({n, c}, dt, rng, -10, 10);
        Tensor loss = empty({n}, dt);
        cpu().cross_entropy(loss, logits, targets, -100);
        std::vector<double> x = values(logits), want(n, 0), probs(n * c, 0);
        for (int64_t r = 0; r < n; ++r) {
          double mx = -INFINITY, s = 0;
          for (int64_t j = 0; j < c; ++j) mx = std::max(mx, x[r * c + j]);
          for (int64_t j = 0; j < c; ++j) s += std::exp(x[r * c + j] - mx);
          for (int64_t j = 0; j < c; ++j) probs[r * c + j] = std::exp(x[r * c + j] - mx) / s;
          if (t[r] != -100) want[r] = mx + std::log(s) - x[r * c + t[r]];
        }
        double tol = dt == DType::bf16 ? 2e-2 : tolerance(dt) * 10;
        check_close(values(loss), want, tol, what);

        Tensor dloss = random_tensor({n}, dt, rng), dlogits = empty({n, c}, dt);
        cpu().cross_entropy_backward(dlogits, logits, targets, dloss, -100);
        std::vector<double> g = values(dloss), dwant(n * c, 0);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < c && t[r] != -100; ++j)
            dwant[r * c + j] = (probs[r * c + j] - (j == t[r])) * g[r];
        check_close(values(dlogits), dwant, tol, what + " backward");
      }
}

}  // namespace
}  // namespace rg::test
