#include <cstring>

#include "core/philox.h"
#include "tests/kernels_cpu/helpers.h"

namespace rg::test {
namespace {

TEST_CASE("random gives element i the Philox number of offset + i, for any thread count") {
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (RandomKind kind : {RandomKind::uniform, RandomKind::normal}) {
      Tensor a = empty({3, 7001}, dt), b = empty({3, 7001}, dt);
      with_threads(1, [&] { cpu().random(a, kind, 42, 1000); });
      with_threads(2, [&] { cpu().random(b, kind, 42, 1000); });
      CHECK(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
      std::vector<double> va = values(a);
      for (int64_t i : {int64_t(0), int64_t(1), int64_t(12345), int64_t(21002)}) {
        float v = kind == RandomKind::uniform ? philox_uniform(42, 1000 + i)
                                              : philox_normal(42, 1000 + i);
        double want = dt == DType::bf16 ? double(float(bf16_t(v))) : double(v);
        CHECK(va[i] == want);
      }
      // A transposed output still numbers elements in its own row-major order.
      Tensor t = make_view(empty({7001, 3}, dt), {3, 7001}, {1, 3}, 0);
      cpu().random(t, kind, 42, 1000);
      CHECK(values(t) == va);
    }
  Tensor u = empty({200000});
  cpu().random(u, RandomKind::uniform, 7, 0);
  double mean = 0;
  for (double v : values(u)) mean += v / 200000;
  CHECK(std::abs(mean - 0.5) < 0.01);
  CHECK(error_of([&] {
          cpu().random(empty({2}, DType::i64), RandomKind::uniform, 1, 0);
        }).find("random") == 0);
}

TEST_CASE("adamw follows PyTorch's single-tensor AdamW step by step") {
  std::mt19937 rng(12);
  for (DType dt : {DType::f32, DType::f64}) {
    int64_t n = 40001;
    Tensor p = random_tensor({n}, dt, rng), m = empty({n}, dt), v = empty({n}, dt);
    for (int64_t i = 0; i < n; ++i) set(m, i, 0), set(v, i, 0);
    std::vector<double> rp = values(p), rm(n, 0), rv(n, 0);
    AdamWArgs args{1e-2, 0.9, 0.999, 1e-8, 0.1, 0};
    for (int step = 1; step <= 3; ++step) {
      Tensor g = random_tensor({n}, dt, rng);
      std::vector<double> vg = values(g);
      args.step = step;
      cpu().adamw(p, g, m, v, args);
      double bc1 = 1 - std::pow(0.9, step), bc2 = 1 - std::pow(0.999, step);
      for (int64_t i = 0; i < n; ++i) {
        rp[i] *= 1 - 1e-2 * 0.1;
        rm[i] = 0.9 * rm[i] + 0.1 * vg[i];
        rv[i] = 0.999 * rv[i] + 0.001 * vg[i] * vg[i];
        rp[i] -= 1e-2 / bc1 * rm[i] / (std::sqrt(rv[i]) / std::sqrt(bc2) + 1e-8);
      }
      double tol = dt == DType::f32 ? 1e-5 : 1e-12;
      check_close(values(p), rp, tol, "adamw param step " + std::to_string(step));
      check_close(values(m), rm, tol, "adamw exp_avg");
      check_close(values(v), rv, tol, "adamw exp_avg_sq");
    }
  }
}

TEST_CASE("adamw's dtype dispatch names the op and the dtypes it takes") {
  Tensor p = empty({3}, DType::bf16);
  CHECK(error_of([&] {
          cpu().adamw(p, p, p, p, AdamWArgs{1e-3, 0.9, 0.999, 1e-8, 0, 1});
        }) == "adamw: unsupported dtype bfloat16 (expected float32 or float64)");
}

// Kernels check their contract (core/op_table.h) only in debug builds; the op layer
// (here the optimizer) rejects bad arguments in every build.
#ifndef NDEBUG
TEST_CASE("in debug builds the adamw kernel asserts its contract, naming the op") {
  Tensor p = empty({3}), g = empty({4});
  CHECK(error_of([&] {
          cpu().adamw(p, g, p, p, AdamWArgs{1e-3, 0.9, 0.999, 1e-8, 0, 1});
        }).find("adamw") == 0);
}
#endif

TEST_CASE("adamw matches PyTorch's float32 formula bit for bit on one element") {
  // torch.optim.AdamW(foreach=False): p.mul_(1-lr*wd); m.lerp_(g, 1-b1);
  // v.mul_(b2).addcmul_(g, g, value=1-b2); p.addcdiv_(m, v.sqrt()/sqrt(bc2) + eps, value=-lr/bc1)
  float p = 0.5f, g = -0.25f, m = 0.125f, v = 0.0625f;
  AdamWArgs a{1e-3, 0.9, 0.999, 1e-8, 0.01, 5};
  Tensor tp = from_blob(&p, {1}), tg = from_blob(&g, {1}), tm = from_blob(&m, {1}),
         tv = from_blob(&v, {1});
  float ep = 0.5f * float(1 - 1e-3 * 0.01);
  float em = 0.125f + float(0.1) * (-0.25f - 0.125f);
  float ev = 0.0625f * float(0.999) + float(1 - 0.999) * -0.25f * -0.25f;
  float denom = std::sqrt(ev) / float(std::sqrt(1 - std::pow(0.999, 5))) + float(1e-8);
  ep = ep + float(-(1e-3 / (1 - std::pow(0.9, 5)))) * em / denom;
  cpu().adamw(tp, tg, tm, tv, a);
  CHECK(p == ep);
  CHECK(m == em);
  CHECK(v == ev);
}

}  // namespace
}  // namespace rg::test
