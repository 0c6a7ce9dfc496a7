// The fused linear kernel (out = x @ weight^T + bias, the bias in the GEMM's epilogue) on
// cpu and on sim/cuda against the two kernels it replaces: matmul, then a broadcast add.
// Odd shapes (M, N or K of 1, K = 0), weight and x as transposed or strided views,
// f32/f64/bf16, with and without a bias; TF32 only when allowed.
#include <cmath>

#include "kernels/cuda/stream.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

// [rows, cols] random cpu tensor: contiguous, a transposed view, or every second column.
Tensor matrix(int64_t rows, int64_t cols, DType dtype, int layout, uint64_t seed) {
  if (layout == 1)
    return make_view(random_tensor({cols, rows}, dtype, seed, -1, 1), {rows, cols}, {1, rows}, 0);
  if (layout == 2)
    return make_view(random_tensor({rows, 2 * cols}, dtype, seed, -1, 1), {rows, cols},
                     {2 * cols, 2}, 0);
  return random_tensor({rows, cols}, dtype, seed, -1, 1);
}

// The composition linear replaces, on the cpu: matmul(x, weight^T), then add(., bias).
Tensor matmul_then_add(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  Tensor product = empty({m, n}, x.dtype());
  Tensor p3 = make_view(product, {1, m, n}, {m * n, n, 1}, 0);
  if (k == 0)
    cpu_kernels().fill(product, 0.0);
  else
    cpu_kernels().matmul(p3, make_view(x, {1, m, k}, {0, x.stride(0), x.stride(1)}, x.offset()),
                         make_view(w, {1, k, n}, {0, w.stride(1), w.stride(0)}, w.offset()));
  if (!bias.defined()) return product;
  Tensor out = empty({m, n}, x.dtype());
  cpu_kernels().binary(BinaryOp::add, out, product, make_view(bias, {m, n}, {0, 1}, 0));
  return out;
}

double tolerance(DType dtype) {
  return dtype == DType::f32 ? 1e-4 : (dtype == DType::bf16 ? 2e-2 : 1e-10);
}

// cpu linear and `device`'s linear both agree with matmul + add.
void check_linear(Device device, const Tensor& x, const Tensor& w, const Tensor& bias) {
  INFO("x ", shape_str(x.shape()), " weight ", shape_str(w.shape()), " bias ", bias.defined());
  Tensor want = matmul_then_add(x, w, bias);
  Tensor cpu_out = empty(want.shape(), x.dtype());
  cpu_kernels().linear(cpu_out, x, w, bias);
  expect_close(cpu_out, want, tolerance(x.dtype()), "cpu linear");
  Tensor got = empty(want.shape(), x.dtype(), device);
  kernels_of(device).linear(got, mirror(x, device), mirror(w, device),
                            bias.defined() ? mirror(bias, device) : Tensor());
  expect_close(got, want, tolerance(x.dtype()), "device linear");
}

}  // namespace

GPU_KERNEL_TEST(linear_matches_matmul_then_add_on_odd_shapes) {
  const int64_t shapes[][3] = {{1, 1, 1},    {1, 7, 5},     {9, 3, 1},   {5, 1, 4},
                               {31, 33, 17}, {64, 96, 128}, {2, 64, 192}};  // M, K, N
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (const auto& s : shapes)
      for (bool with_bias : {true, false}) {
        Tensor bias = with_bias ? random_tensor({s[2]}, dtype, 7, -1, 1) : Tensor();
        check_linear(device, matrix(s[0], s[1], dtype, 0, 1), matrix(s[2], s[1], dtype, 0, 2),
                     bias);
      }
}

GPU_KERNEL_TEST(linear_takes_transposed_and_strided_views) {
  for (int layout_x : {0, 1, 2})
    for (int layout_w : {0, 1, 2}) {
      INFO("layouts ", layout_x, " ", layout_w);
      check_linear(device, matrix(17, 23, DType::f32, layout_x, 3),
                   matrix(19, 23, DType::f32, layout_w, 4), random_tensor({19}, DType::f32, 5));
    }
}

GPU_KERNEL_TEST(linear_with_empty_inner_dim_gives_the_bias) {
  for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
    Tensor x = empty({3, 0}, dtype), w = empty({4, 0}, dtype);
    Tensor bias = random_tensor({4}, dtype, 9, -1, 1);
    check_linear(device, x, w, bias);
    check_linear(device, x, w, Tensor());
    Tensor got = empty({3, 4}, dtype, device);
    kernels_of(device).linear(got, mirror(x, device), mirror(w, device), mirror(bias, device));
    std::vector<double> g = values(got), b = values(bias);
    for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == b[i % 4]);
  }
}

// TF32 (rg::set_allow_tf32), off by default as in PyTorch. When allowed, f32 matmul and
// linear read their operands with a 10-bit mantissa (tensor cores on a GPU, the shim's
// rounding on sim): 1 + 2^-12 reads as 1, so 64 such products sum to exactly 64. TF32 is a
// permission, not an order: cuBLAS computes a 1 x 64 x 1 product without tensor cores (seen
// on an H200), so the products here are 256 x 64 x 256, where it uses them.
GPU_KERNEL_TEST(tf32_rounds_f32_operands_only_when_allowed) {
  CHECK_FALSE(allow_tf32());
  struct Restore {
    ~Restore() { set_allow_tf32(false); }
  } restore;
  const int64_t k = 64, m = 256;
  const float near_one = 1.0f + 0x1p-12f, exact = float(k) * near_one * near_one;
  Tensor x = empty({m, k}), bias = empty({m});
  for (int64_t i = 0; i < m * k; ++i) x.data<float>()[i] = near_one;
  for (int64_t i = 0; i < m; ++i) bias.data<float>()[i] = 0.5f;
  Tensor xd = mirror(x, device), bd = mirror(bias, device);
  // Every element of the m x m result, which must all be equal: that value, else NaN.
  auto only_value = [](const Tensor& out) {
    std::vector<double> v = values(out);
    for (double e : v)
      if (e != v[0]) return std::nan("");
    return v[0];
  };
  auto linear_value = [&] {
    Tensor out = empty({m, m}, DType::f32, device);
    kernels_of(device).linear(out, xd, xd, bd);
    return only_value(out);
  };
  auto matmul_value = [&] {
    Tensor out = empty({1, m, m}, DType::f32, device);
    kernels_of(device).matmul(out, make_view(xd, {1, m, k}, {m * k, k, 1}, 0),
                              make_view(xd, {1, k, m}, {m * k, 1, k}, 0));
    return only_value(out);
  };
  CHECK(matmul_value() == doctest::Approx(exact).epsilon(1e-6));
  CHECK(linear_value() == doctest::Approx(exact + 0.5).epsilon(1e-6));
  set_allow_tf32(true);
  CHECK(matmul_value() == 64.0);
  CHECK(linear_value() == 64.5);
  set_allow_tf32(false);
  CHECK(matmul_value() == doctest::Approx(exact).epsilon(1e-6));
}
