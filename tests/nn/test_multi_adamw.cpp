// Multi-tensor AdamW, gradient norm and clipping (issues 11 and 14): AdamW::step's grouped
// adamw_multi calls against one single-tensor adamw kernel call per parameter, bit for bit;
// the folded clip (step(grad_scale)) against clip_grad_norm_ then step(); grad_norm against
// the old per-parameter formula; sim against cpu; the ops' argument errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "kernels/builtin.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::optim;

namespace {

const Device kSim(DeviceType::sim);

// Sizes 1, 3, 4097 and 40000 (three cpu chunks of 16384); regroup() puts the first two in
// a decay group and the last two in a no-decay group, so the flat order is AdamW's.
std::vector<Tensor> four_params(DType dtype) {
  std::vector<Tensor> out;
  for (int64_t n : {1, 3, 4097, 40000}) out.push_back(randn({n}, dtype).requires_grad_());
  return out;
}

std::vector<Tensor> clones(const std::vector<Tensor>& params, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(clone(p.detach()).to(device).requires_grad_());
  return out;
}

std::vector<ParamGroup> regroup(const std::vector<Tensor>& flat) {
  return {ParamGroup{{flat[0], flat[1]}, std::nullopt}, ParamGroup{{flat[2], flat[3]}, 0.0}};
}

// Gradients of step `s`, the same for every copy; parameter 1 gets none at step 2 (its step
// count then lags: a third group).
void set_grads(std::vector<Tensor>& params, int s) {
  manual_seed(100 + s);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = mul(randn(params[i].shape(), DType::f64), scalar_tensor(3.0, DType::f64));
    params[i].set_grad(i == 1 && s == 2 ? Tensor() : g.to(params[i].device(), params[i].dtype()));
  }
}

}  // namespace

TEST_CASE(
    "AdamW's multi-tensor step equals one single-tensor adamw call per parameter, bit for bit") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype);
    manual_seed(7);
    std::vector<Tensor> ps = four_params(dtype), ref = clones(ps, kCPU);
    AdamW opt(regroup(ps), {.lr = 1e-2, .weight_decay = 0.1});
    std::vector<Tensor> m, v;
    std::vector<int64_t> steps(ref.size(), 0);
    for (const Tensor& p : ref) m.push_back(zeros_like(p)), v.push_back(zeros_like(p));
    for (int s = 0; s < 4; ++s) {
      set_grads(ps, s);
      set_grads(ref, s);
      opt.step();
      for (size_t i = 0; i < ref.size(); ++i) {
        if (!ref[i].grad().defined()) continue;
        AdamWArgs args{1e-2, 0.9, 0.999, 1e-8, i < 2 ? 0.1 : 0.0, ++steps[i]};
        kernel_table(DeviceType::cpu).adamw(ref[i].detach(), ref[i].grad(), m[i], v[i], args);
      }
      for (size_t i = 0; i < ref.size(); ++i) {
        CHECK(equal(ps[i].detach(), ref[i].detach()));
        CHECK(equal(opt.state(i).exp_avg_sq, v[i]));
      }
    }
    CHECK(opt.state(1).step == 3);
    CHECK(opt.state(0).step == 4);
  }
}

TEST_CASE("AdamW::step(grad_scale) equals clip_grad_norm_ then step(), bit for bit") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype);
    manual_seed(8);
    std::vector<Tensor> a = four_params(dtype), b = clones(a, kCPU);
    AdamW clipped(regroup(a), {.lr = 1e-2}), folded(regroup(b), {.lr = 1e-2});
    for (int s = 0; s < 3; ++s) {
      set_grads(a, s);
      set_grads(b, s);
      const double norm = clip_grad_norm_(a, 5.0);
      clipped.step();
      const double scale = clip_scale(grad_norm(b), 5.0);
      CHECK(scale < 1.0);
      CHECK(clip_scale(grad_norm(b), 5.0) == 5.0 / (norm + 1e-6));
      folded.step(scale);
      for (size_t i = 0; i < a.size(); ++i) CHECK(equal(a[i].detach(), b[i].detach()));
    }
    CHECK(grad_norm(b) > 5.0);  // the folded step leaves .grad as it is
  }
}

TEST_CASE("grad_norm equals the per-parameter sum(square(g.to(f64))) added in order, bit for bit") {
  manual_seed(9);
  std::vector<Tensor> ps = four_params(DType::f32);
  ps.push_back(randn({70000}, DType::bf16).requires_grad_());  // a second dtype group
  ps.push_back(randn({5}, DType::f64).requires_grad_());       // no gradient
  set_grads(ps, 0);
  ps.back().set_grad(Tensor());
  ps[4].set_grad(randn({70000}, DType::bf16));
  double total = 0.0;
  for (const Tensor& p : ps)
    if (p.grad().defined()) total += sum(square(p.grad().to(DType::f64))).item();
  CHECK(grad_norm(ps) == std::sqrt(total));
}

TEST_CASE("sim: multi-tensor AdamW, grad_norm and clipping match cpu") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype);
    manual_seed(10);
    std::vector<Tensor> c = four_params(dtype), g = clones(c, kSim);
    AdamW on_cpu(regroup(c), {.lr = 1e-2}), on_sim(regroup(g), {.lr = 1e-2});
    for (int s = 0; s < 3; ++s) {
      set_grads(c, s);
      set_grads(g, s);
      const double nc = grad_norm(c), ng = grad_norm(g);
      CHECK(ng == doctest::Approx(nc).epsilon(1e-14));
      CHECK(clip_grad_norm_(g, 5.0) == ng);
      on_sim.step();
      on_cpu.step(clip_scale(nc, 5.0));
      const double tol = dtype == DType::f32 ? 5e-6 : 1e-14;
      for (size_t i = 0; i < c.size(); ++i)
        CHECK(max_abs_diff(c[i].detach(), g[i].detach().to(kCPU)) <= tol);
    }
  }
}

TEST_CASE("the multi-tensor ops name the op and the value on bad lists") {
  auto error_of = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  Tensor a = zeros({3}), b = zeros({4}), d = zeros({3}, DType::f64), s = zeros({3}).to(kSim);
  AdamWArgs args{1e-3, 0.9, 0.999, 1e-8, 0, 1};
  CHECK(error_of([&] {
          adamw_multi({{a, a, a, a}, {b, a, b, b}}, args);
        }) == "adamw_multi: set 1 grad has shape [3], its param [4]");
  CHECK(error_of([&] {
          adamw_multi({{a, a, a, a}, {a, d, a, a}}, args);
        }) ==
        "adamw_multi: set 1 grad has dtype float64, set 0 param float32; one call takes one dtype");
  CHECK(error_of([&] {
          adamw_multi({{a, a, a, a}, {a, a, s, a}}, args);
        }) ==
        "adamw_multi: set 1 exp_avg is on sim, set 0 param on cpu; one call takes one device");
  CHECK(
      error_of([&] {
        sum_squares_multi({a, d});
      }) ==
      "sum_squares_multi: tensor 1 has dtype float64, tensor 0 float32; one call takes one dtype");
  CHECK(error_of([&] {
          scale_multi({a, s}, 0.5);
        }) == "scale_multi: tensor 1 is on sim, tensor 0 on cpu; one call takes one device");
}
