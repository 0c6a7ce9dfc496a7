// matmul on sim/cuda against the cpu kernel: odd sizes, transposed views passed in place,
// views that must be copied, broadcast batches (stride 0), f32/f64/bf16.
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

enum class Layout { contiguous, transposed, sliced };

// A [batch, rows, cols] cpu tensor laid out as asked.
Tensor operand(int64_t batch, int64_t rows, int64_t cols, DType dtype, Layout layout,
               uint64_t seed) {
  switch (layout) {
    case Layout::contiguous:
      return random_tensor({batch, rows, cols}, dtype, seed, -1, 1);
    case Layout::transposed: {
      Tensor base = random_tensor({batch, cols, rows}, dtype, seed, -1, 1);
      return make_view(base, {batch, rows, cols}, {rows * cols, 1, rows}, 0);
    }
    case Layout::sliced: {  // every second column: neither rows nor columns contiguous
      Tensor base = random_tensor({batch, rows, 2 * cols}, dtype, seed, -1, 1);
      return make_view(base, {batch, rows, cols}, {rows * 2 * cols, 2 * cols, 2}, 0);
    }
  }
  return Tensor();
}

void check_matmul(Device device, const Tensor& a, const Tensor& b) {
  Shape out_shape{a.size(0), a.size(1), b.size(2)};
  Tensor want = empty(out_shape, a.dtype());
  cpu_kernels().matmul(want, a, b);
  Tensor got = empty(out_shape, a.dtype(), device);
  kernels_of(device).matmul(got, mirror(a, device), mirror(b, device));
  double tol = a.dtype() == DType::f32 ? 1e-4 : (a.dtype() == DType::bf16 ? 2e-2 : 1e-10);
  expect_close(got, want, tol, "matmul");
}

}  // namespace

GPU_KERNEL_TEST(matmul_matches_cpu_on_odd_sizes) {
  const int64_t sizes[][3] = {{1, 1, 1}, {31, 32, 33}, {33, 1, 7}, {5, 65, 1}, {64, 128, 96}};
  for (DType dtype : {DType::f32, DType::f64, DType::bf16})
    for (const auto& s : sizes)
      check_matmul(device, operand(2, s[0], s[1], dtype, Layout::contiguous, 1),
                   operand(2, s[1], s[2], dtype, Layout::contiguous, 2));
}

GPU_KERNEL_TEST(matmul_takes_transposed_and_strided_views) {
  const Layout layouts[] = {Layout::contiguous, Layout::transposed, Layout::sliced};
  for (Layout la : layouts)
    for (Layout lb : layouts) {
      INFO("layouts ", int(la), " ", int(lb));
      check_matmul(device, operand(3, 17, 23, DType::f32, la, 3),
                   operand(3, 23, 19, DType::f32, lb, 4));
    }
}

GPU_KERNEL_TEST(matmul_broadcasts_a_batch_with_stride_0) {
  Tensor w = random_tensor({1, 24, 10}, DType::f32, 5);
  Tensor b = make_view(w, {4, 24, 10}, {0, 10, 1}, 0);
  Tensor a = random_tensor({4, 9, 24}, DType::f32, 6);
  Shape out_shape{4, 9, 10};
  Tensor want = empty(out_shape);
  cpu_kernels().matmul(want, a, b);
  Tensor got = empty(out_shape, DType::f32, device);
  Tensor wd = mirror(w, device);
  kernels_of(device).matmul(got, mirror(a, device), make_view(wd, {4, 24, 10}, {0, 10, 1}, 0));
  expect_close(got, want, 1e-4);
}

GPU_KERNEL_TEST(matmul_with_empty_inner_dim_gives_zeros) {
  Tensor a = empty({1, 3, 0}, DType::f32, device), b = empty({1, 0, 4}, DType::f32, device);
  Tensor out = empty({1, 3, 4}, DType::f32, device);
  kernels_of(device).matmul(out, a, b);
  for (double v : values(out)) CHECK(v == 0);
}
