// The composite ops (ops/ops.h, "composite ops") on sim (and cuda) against cpu: each is
// built from ops whose kernels every device has, so forward and gradient must agree with
// the cpu's for f32 inputs (to rounding: the kernels may sum in another order).
#include <functional>

#include "ringgrad.h"
#include "tests/kernels/helpers.h"

using namespace rg;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// fn on cpu inputs and on their copies on `device`: outputs and input gradients agree.
void same_on_device(const char* name, const Fn& fn, const std::vector<Tensor>& cpu_inputs,
                    Device device) {
  INFO(name);
  std::vector<Tensor> on_cpu, on_device;
  for (const Tensor& t : cpu_inputs) {
    on_cpu.push_back(t.contiguous().clone().requires_grad_());
    on_device.push_back(t.to(device).requires_grad_());
  }
  Tensor want = fn(on_cpu), got = fn(on_device);
  REQUIRE(got.device() == device);
  CHECK(allclose(got.to(kCPU), want, 1e-4, 1e-5));
  sum(mul(want, want)).backward();
  sum(mul(got, got)).backward();
  for (size_t i = 0; i < on_cpu.size(); ++i)
    CHECK(allclose(on_device[i].grad().to(kCPU), on_cpu[i].grad(), 1e-4, 1e-4));
}

Tensor r(const Shape& s, uint64_t seed) { return test::random_tensor(s, kFloat32, seed); }

}  // namespace

GPU_KERNEL_TEST(composite_ops_equal_the_cpu) {
  same_on_device(
      "var", [](auto& x) { return var(x[0], {1}); }, {r({4, 5}, 1)}, device);
  same_on_device(
      "std", [](auto& x) { return std_dev(x[0], {0}, 0, true); }, {r({4, 5}, 2)}, device);
  same_on_device(
      "norm", [](auto& x) { return norm(x[0], 2, {1}); }, {r({3, 6}, 3)}, device);
  same_on_device(
      "norm inf", [](auto& x) { return norm(x[0], INFINITY); }, {r({3, 6}, 4)}, device);
  same_on_device(
      "tril", [](auto& x) { return tril(x[0], 1); }, {r({2, 4, 4}, 5)}, device);
  same_on_device(
      "repeat",
      [](auto& x) {
        return repeat(x[0], {2, 1, 3});
      },
      {r({2, 3}, 6)}, device);
  same_on_device(
      "pad reflect",
      [](auto& x) {
        return pad(x[0], {2, 1, 1, 1}, "reflect");
      },
      {r({2, 4, 5}, 7)}, device);
  same_on_device(
      "einsum", [](auto& x) { return einsum("bhqd,bhkd->bhqk", x); },
      {r({2, 2, 3, 4}, 8), r({2, 2, 5, 4}, 9)}, device);
  same_on_device(
      "conv2d",
      [](auto& x) {
        return conv2d(x[0], x[1], x[2], {2, 1}, {1, 1}, {1, 2}, 2);
      },
      {r({2, 4, 6, 7}, 10), r({4, 2, 3, 2}, 11), r({4}, 12)}, device);
  same_on_device(
      "max_pool2d",
      [](auto& x) {
        return max_pool2d(x[0], {3, 3}, {2, 2}, {1, 1});
      },
      {r({1, 2, 7, 6}, 13)}, device);
  same_on_device(
      "avg_pool2d",
      [](auto& x) {
        return avg_pool2d(x[0], {2, 2}, {1, 1}, {1, 1}, true, false);
      },
      {r({1, 2, 5, 5}, 14)}, device);
  same_on_device(
      "batch_norm", [](auto& x) { return batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true); },
      {r({4, 3, 5}, 15), r({3}, 16), r({3}, 17)}, device);
  Tensor idx = tensor(std::vector<int64_t>{3, 0, 2, 2});
  CHECK(equal(one_hot(idx.to(device), 5).to(kCPU), one_hot(idx, 5)));
}

GPU_KERNEL_TEST(batch_norm_updates_running_stats_on_the_device) {
  Tensor x = r({6, 3, 2}, 20);
  Tensor mean_cpu = zeros({3}), var_cpu = ones({3});
  Tensor mean_dev = zeros({3}, kFloat32, device), var_dev = ones({3}, kFloat32, device);
  batch_norm(x, mean_cpu, var_cpu, Tensor(), Tensor(), true, 0.3);
  batch_norm(x.to(device), mean_dev, var_dev, Tensor(), Tensor(), true, 0.3);
  CHECK(allclose(mean_dev.to(kCPU), mean_cpu, 1e-5, 1e-6));
  CHECK(allclose(var_dev.to(kCPU), var_cpu, 1e-5, 1e-6));
}
