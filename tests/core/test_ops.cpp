// Every op against a naive reference loop in f64. The elementwise ops are taken from the op
// table (core/op_table.h) with their references in tests/elementwise_cases.h, on seeded
// random shapes with broadcasting, non-contiguous views, empty tensors, size-1 dims and
// every dtype; the other ops on hand-picked shapes and views.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "ringgrad.h"
#include "tests/elementwise_cases.h"

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

// The dtype an elementwise op's result must have, from the row's rule (see DTypeRule).
DType expected_dtype(DTypeRule rule, DType in, bool unary) {
  switch (rule) {
    case DTypeRule::same:
      return in == DType::b8 && !unary ? DType::i64 : in;
    case DTypeRule::floating:
      return is_floating(in) ? in : DType::f32;
    case DTypeRule::boolean:
      return DType::b8;
  }
  return in;
}

// Each element of `out` against the f64 reference: exact for integer and bool results,
// else within tol * (1 + |expected|), tol by dtype.
void check_against(const std::string& what, const Tensor& out,
                   const std::vector<double>& expected) {
  double tol = out.dtype() == DType::f64 ? 1e-12 : out.dtype() == DType::f32 ? 1e-5 : 1e-2;
  if (!is_floating(out.dtype())) tol = 0;
  auto got = out.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i << ": got " << got[i] << ", expected " << expected[i]);
    bool same = got[i] == expected[i] || (std::isnan(got[i]) && std::isnan(expected[i]));
    CHECK((same || std::abs(got[i] - expected[i]) <= tol * (1 + std::abs(expected[i]))));
  }
}

const DType kAllDTypes[] = {DType::f64, DType::f32, DType::bf16, DType::i32, DType::i64, DType::b8};

}  // namespace

TEST_CASE("every row of the op table has a reference and a public function, and no stale ones") {
  for (int i = 0; i < kNumUnaryOps; ++i) {
    const char* name = info(UnaryOp(i)).name;
    INFO("unary op " << name << ": add its reference to tests/elementwise_cases.h");
    CHECK(test::unary_cases().count(name) == 1);
    CHECK(test::unary_functions().count(name) == 1);
  }
  for (int i = 0; i < kNumBinaryOps; ++i) {
    const char* name = info(BinaryOp(i)).name;
    INFO("binary op " << name << ": add its reference to tests/elementwise_cases.h");
    CHECK(test::binary_cases().count(name) == 1);
    CHECK(test::binary_functions().count(name) == 1);
  }
  CHECK(test::unary_cases().size() == size_t(kNumUnaryOps));
  CHECK(test::binary_cases().size() == size_t(kNumBinaryOps));
}

TEST_CASE("every unary op matches its f64 reference on random shapes, layouts and dtypes") {
  for (int i = 0; i < kNumUnaryOps; ++i) {
    const ElementwiseInfo& op = info(UnaryOp(i));
    const test::UnaryCase& ref = test::unary_cases().at(op.name);
    test::RandomInputs rnd(1000 + i);
    for (DType dtype : kAllDTypes) {
      for (int trial = 0; trial < 6; ++trial) {
        Shape shape = rnd.shape();
        Tensor x = rnd.tensor_of(shape, dtype, ref.x, op.rule == DTypeRule::boolean);
        std::string what = str(op.name, "(", dtype_name(dtype), " ", shape_str(shape), ")");
        INFO(what);
        if (op.rule == DTypeRule::same && dtype == DType::b8) {
          std::string message = str(op.name, ": not supported for bool tensors");
          CHECK_THROWS_WITH_AS(test::unary_functions().at(op.name)(x), message.c_str(), Error);
          continue;
        }
        Tensor out = test::unary_functions().at(op.name)(x);
        REQUIRE(out.shape() == shape);
        CHECK(out.dtype() == expected_dtype(op.rule, dtype, true));
        std::vector<double> expected;
        for (double v : x.to_vector<double>()) expected.push_back(ref.reference(v));
        check_against(what, out, expected);
      }
    }
  }
}

TEST_CASE("every binary op matches its f64 reference under broadcasting, layouts and dtypes") {
  for (int i = 0; i < kNumBinaryOps; ++i) {
    const ElementwiseInfo& op = info(BinaryOp(i));
    const test::BinaryCase& ref = test::binary_cases().at(op.name);
    test::RandomInputs rnd(2000 + i);
    for (DType dtype : kAllDTypes) {
      for (int trial = 0; trial < 6; ++trial) {
        Shape full = rnd.shape(), partner = rnd.broadcastable_to(full);
        bool a_full = rnd.below(2) == 0;
        Shape sa = a_full ? full : partner, sb = a_full ? partner : full;
        bool ties = op.rule == DTypeRule::boolean || op.name == std::string("maximum") ||
                    op.name == std::string("minimum");
        Tensor a = rnd.tensor_of(sa, dtype, ref.a, ties), b = rnd.tensor_of(sb, dtype, ref.b, ties);
        std::string what =
            str(op.name, "(", dtype_name(dtype), " ", shape_str(sa), ", ", shape_str(sb), ")");
        INFO(what);
        Tensor out = test::binary_functions().at(op.name)(a, b);
        REQUIRE(out.shape() == full);
        CHECK(out.dtype() == expected_dtype(op.rule, dtype, false));
        auto va = a.to_vector<double>(), vb = b.to_vector<double>();
        std::vector<double> expected;
        for (int64_t k = 0; k < numel_of(full); ++k) {
          auto idx = unravel(k, full);
          expected.push_back(
              ref.reference(va[ravel_broadcast(idx, sa)], vb[ravel_broadcast(idx, sb)]));
        }
        check_against(what, out, expected);
      }
    }
  }
}

TEST_CASE("binary ops promote mixed dtypes before applying the row's rule") {
  Tensor i = tensor(std::vector<int64_t>{1, 2, 3}), f = tensor(std::vector<float>{0.5f, 2, 4});
  CHECK(add(i, f).dtype() == kFloat32);
  CHECK(div(i, tensor(std::vector<int64_t>{2, 2, 2})).to_vector<float>() ==
        std::vector<float>{0.5f, 1, 1.5f});
  CHECK(lt(i, f).to_vector<double>() == std::vector<double>{0, 0, 1});
  CHECK(add(f, i.to(kFloat64), 0.5).to_vector<double>() == std::vector<double>{1, 3, 5.5});
}

// The op list of docs/adding-an-op.md, as the table generates it.
static std::string op_list_markdown() {
  std::ostringstream md;
  md << "| op | dtype rule | forward | gradient |\n|---|---|---|---|\n";
  for (int i = 0; i < kNumUnaryOps; ++i) {
    const ElementwiseInfo& op = info(UnaryOp(i));
    md << "| `" << op.name << "(x)` | " << rule_name(op.rule) << " | `" << op.forward << "` | `"
       << op.gradient[0] << "` |\n";
  }
  for (int i = 0; i < kNumBinaryOps; ++i) {
    const ElementwiseInfo& op = info(BinaryOp(i));
    md << "| `" << op.name << "(a, b)` | " << rule_name(op.rule) << " | `" << op.forward << "` | `"
       << op.gradient[0] << "`, `" << op.gradient[1] << "` |\n";
  }
  return md.str();
}

// The reduction list of docs/adding-an-op.md, as the table generates it.
static std::string reduce_list_markdown() {
  std::ostringstream md;
  md << "| op | dtype rule | kind | identity | combine | finish | gradient |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (int i = 0; i < kNumReduceOps; ++i) {
    const ReduceInfo& op = info(ReduceOp(i));
    md << "| `" << op.name << "(x, " << (op.rule == ReduceRule::index ? "dim" : "dims") << ")` | "
       << rule_name(op.rule) << " | " << kind_name(op.kind) << " | `" << op.identity << "` | `"
       << op.combine << "` | `" << op.finish << "` | `" << op.gradient << "` |\n";
  }
  return md.str();
}

// The text between <!-- name:begin --> and <!-- name:end --> in docs/adding-an-op.md.
static std::string doc_section(const std::string& name) {
  std::ifstream file(std::string(RG_SOURCE_ROOT) + "/docs/adding-an-op.md");
  REQUIRE(file.good());
  std::string doc((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::string begin = "<!-- " + name + ":begin -->\n", end = "<!-- " + name + ":end -->";
  size_t from = doc.find(begin), to = doc.find(end);
  REQUIRE_MESSAGE(from != std::string::npos, "no marker ", begin);
  REQUIRE_MESSAGE(to != std::string::npos, "no marker ", end);
  return doc.substr(from + begin.size(), to - from - begin.size());
}

TEST_CASE("docs/adding-an-op.md lists exactly the ops of the table") {
  INFO("the op list is stale; replace the lines between the op-list markers with:\n"
       << op_list_markdown());
  CHECK(doc_section("op-list") == op_list_markdown());
}

TEST_CASE("docs/adding-an-op.md lists exactly the reductions of the table") {
  INFO("the reduction list is stale; replace the lines between the reduce-list markers with:\n"
       << reduce_list_markdown());
  CHECK(doc_section("reduce-list") == reduce_list_markdown());
}

TEST_CASE("gelu(x, approximate) is PyTorch's: exact by default, \"tanh\" on request") {
  Tensor x = tensor(std::vector<double>{-1, 0.5, 1}, {3}, kFloat64);
  // torch.nn.functional.gelu(torch.tensor([-1, .5, 1], dtype=torch.float64)[, approximate='tanh'])
  auto exact = gelu(x).to_vector<double>();
  CHECK(exact[0] == doctest::Approx(-0.15865525393145707).epsilon(1e-15));
  CHECK(exact[1] == doctest::Approx(0.34573123063700656).epsilon(1e-15));
  CHECK(exact[2] == doctest::Approx(0.8413447460685429).epsilon(1e-15));
  CHECK(equal(gelu(x, "none"), gelu(x)));
  auto approx = gelu(x, "tanh").to_vector<double>();
  CHECK(approx[0] == doctest::Approx(-0.15880800939172324).epsilon(1e-15));
  CHECK(approx[2] == doctest::Approx(0.8411919906082768).epsilon(1e-15));
  CHECK(equal(gelu(x, "tanh"), gelu_tanh(x)));
  CHECK_THROWS_WITH_AS(
      gelu(x, "erf"),
      doctest::Contains("gelu: approximate must be \"none\" or \"tanh\", got \"erf\""), Error);
}

TEST_CASE("gelu_tanh in f32 keeps its relative accuracy in the negative tail, value and slope") {
  // 0.5 x (1 + tanh(u)) loses every digit there in float (1 + tanh(u) cancels); ringgrad
  // computes x sigma(2u), its equal, which does not.
  std::vector<double> xs;
  for (double v = -9; v <= 3; v += 0.25) xs.push_back(v);
  Tensor x = tensor(xs, {static_cast<int64_t>(xs.size())}, kFloat32).requires_grad_(true);
  Tensor y = gelu_tanh(x);
  sum(y).backward();
  const auto value = y.to_vector<double>(), slope = x.grad().to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    // The reference in double, through 1 + tanh(u) = 2 / (1 + e^{-2u}) too: the tanh form
    // cancels in double as well from x = -7 down (1 + tanh(u) < 1e-16 there).
    const double v = static_cast<float>(xs[i]), c = std::sqrt(2 / M_PI);
    const double s = 1 / (1 + std::exp(-2 * c * (v + 0.044715 * v * v * v)));
    const double want = v * s,
                 want_slope = s + 2 * v * s * (1 - s) * c * (1 + 3 * 0.044715 * v * v);
    INFO("x = ", v, ": gelu ", value[i], " slope ", slope[i], ", want ", want, " ", want_slope);
    CHECK(std::abs(value[i] - want) <= 1e-5 * std::abs(want));
    // The slope crosses zero near -0.75 (cancellation in f32 there); relative from -2 down.
    CHECK(std::abs(slope[i] - want_slope) <= (v <= -2 ? 1e-5 * std::abs(want_slope) : 1e-6));
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
  CHECK_THROWS_WITH_AS(amax(zeros({0, 3}), {0}),
                       doctest::Contains("amax: cannot reduce over dim 0 of size 0"), Error);
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
  for (auto [M, K, N] :
       std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {3, 5, 2}, {17, 33, 9}, {64, 31, 65}}) {
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

namespace {

// softmax(scale * q k^T, masked above the diagonal when causal) @ v, written out.
Tensor attention_composition(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                             double scale) {
  Tensor s = mul(matmul(q, k.transpose(-2, -1)), scale);
  if (causal) s = masked_fill(s, logical_not(tril_mask(q.size(-2), k.size(-2))), -INFINITY);
  return matmul(softmax(s, -1), v);
}

}  // namespace

TEST_CASE("scaled_dot_product_attention equals the written-out composition, values and grads") {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (bool causal : {true, false}) {
      CAPTURE(dt);
      CAPTURE(causal);
      const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 2e-5 : 3e-2;
      Tensor q = rnd({2, 3, 67, 16}, 1).to(dt).requires_grad_(true);
      Tensor k = rnd({2, 3, 67, 16}, 2).to(dt).requires_grad_(true);
      Tensor v = rnd({2, 3, 67, 8}, 3).to(dt).requires_grad_(true);
      Tensor w = rnd({2, 3, 67, 8}, 4).to(dt);  // projects the output to a scalar loss
      auto grads = [&](bool fused) {
        for (Tensor* t : {&q, &k, &v}) t->set_grad(Tensor());
        Tensor out = fused ? scaled_dot_product_attention(q, k, v, causal)
                           : attention_composition(q, k, v, causal, 0.25);
        sum(mul(out, w)).backward();
        return std::vector<Tensor>{out.detach(), q.grad(), k.grad(), v.grad()};
      };
      auto fused = grads(true), written = grads(false);
      for (size_t i = 0; i < fused.size(); ++i) {
        CAPTURE(i);
        CHECK(fused[i].dtype() == dt);
        CHECK(allclose(fused[i].to(kFloat64), written[i].to(kFloat64), tol, tol));
      }
    }
}

TEST_CASE("packed_qkv_attention equals split, heads and scaled_dot_product_attention") {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (bool causal : {true, false}) {
      CAPTURE(dt);
      CAPTURE(causal);
      const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 2e-5 : 3e-2;
      const int64_t B = 2, T = 67, H = 3, D = 4, C = H * D;
      // A transposed view: the op must not assume a contiguous qkv.
      Tensor qkv = rnd({B, 3 * C, T}, 5).to(dt).transpose(1, 2).detach().requires_grad_(true);
      Tensor w = rnd({B, T, C}, 6).to(dt);
      auto run = [&](bool packed) {
        qkv.set_grad(Tensor());
        Tensor y;
        if (packed) {
          y = packed_qkv_attention(qkv, H, causal);
        } else {
          auto parts = split(qkv, C, 2);
          auto heads = [&](const Tensor& t) { return t.reshape({B, T, H, D}).transpose(1, 2); };
          y = scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]),
                                           causal)
                  .transpose(1, 2)
                  .reshape({B, T, C});
        }
        sum(mul(y, w)).backward();
        return std::vector<Tensor>{y.detach(), qkv.grad()};
      };
      auto packed = run(true), composed = run(false);
      CHECK(packed[0].shape() == Shape{B, T, C});
      CHECK(packed[1].shape() == Shape{B, T, 3 * C});
      for (size_t i = 0; i < packed.size(); ++i) {
        CAPTURE(i);
        CHECK(packed[i].dtype() == dt);
        CHECK(allclose(packed[i].to(kFloat64), composed[i].to(kFloat64), tol, tol));
      }
    }
  Tensor x = rnd({2, 3, 12}, 7);
  CHECK_THROWS_WITH_AS(packed_qkv_attention(rnd({2, 3, 10}, 8), 2),
                       doctest::Contains("packed_qkv_attention: qkv must be [B, T, 3C]"), Error);
  CHECK_THROWS_WITH_AS(packed_qkv_attention(x, 3),
                       doctest::Contains("n_head 3 does not divide the width C = 4"), Error);
  CHECK_THROWS_WITH_AS(packed_qkv_attention(rnd({12}, 9), 1), doctest::Contains("got shape [12]"),
                       Error);
  CHECK_THROWS_WITH_AS(packed_qkv_attention(rnd({2, 0, 12}, 9), 1),
                       doctest::Contains("needs at least one position"), Error);
}

TEST_CASE("scaled_dot_product_attention: bad shapes, dtypes and empty keys are named errors") {
  Tensor q = rnd({2, 5, 4}, 1), k = rnd({2, 6, 4}, 2), v = rnd({2, 6, 3}, 3);
  CHECK(scaled_dot_product_attention(q, k, v).shape() == Shape{2, 5, 3});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, rnd({2, 6, 5}, 4), v),
                       doctest::Contains("do not fit [..., T, D], [..., S, D], [..., S, Dv]"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, rnd({3, 6, 3}, 5)),
                       doctest::Contains("shapes [2,5,4], [2,6,4] and [3,6,3]"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k.to(kFloat64), v),
                       doctest::Contains("must have one dtype, got float32, float64 and float32"),
                       Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, rnd({2, 0, 4}, 6), rnd({2, 0, 3}, 7)),
                       doctest::Contains("needs at least one key"), Error);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(rnd({4}, 8), rnd({4}, 9), rnd({4}, 10)),
                       doctest::Contains("the same number (>= 2) of dims"), Error);
}
