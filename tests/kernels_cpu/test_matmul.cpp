#include <cstring>

#include "tests/kernels_cpu/helpers.h"

namespace rg::test {
namespace {

std::vector<double> reference(const Tensor& a, const Tensor& b) {
  int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  std::vector<double> va = values(a), vb = values(b), out(batch * m * n, 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += va[(p * m + i) * k + q] * vb[(p * k + q) * n + j];
        out[(p * m + i) * n + j] = s;
      }
  return out;
}

// An operand of `shape` [B,R,C] in one of several layouts.
Tensor operand(const Shape& shape, int layout, DType dt, std::mt19937& rng) {
  switch (layout) {
    case 0:
      return random_tensor(shape, dt, rng);  // contiguous
    case 1:
      return permuted_tensor(shape, {0, 2, 1}, dt, rng);  // transposed slices
    case 2:
      return permuted_tensor(shape, {1, 2, 0}, dt, rng);  // batch innermost
    case 3: {                                             // broadcast batch
      Tensor one = random_tensor({1, shape[1], shape[2]}, dt, rng);
      return make_view(one, shape, {0, shape[2], 1}, 0);
    }
    default: {  // every other column of a wider tensor (outer stride > cols)
      Tensor wide = random_tensor({shape[0], shape[1], shape[2] * 2 + 1}, dt, rng);
      return make_view(wide, shape, {shape[1] * (shape[2] * 2 + 1), shape[2] * 2 + 1, 2}, 1);
    }
  }
}

TEST_CASE("matmul matches an f64 reference for every operand layout") {
  std::mt19937 rng(4);
  int trial = 0;
  for (DType dt : {DType::f32, DType::f64, DType::bf16})
    for (int la = 0; la < 5; ++la)
      for (int lb = 0; lb < 5; ++lb, ++trial) {
        int64_t batch = 1 + trial % 3;
        int64_t m = std::uniform_int_distribution<int>(1, 40)(rng);
        int64_t k = std::uniform_int_distribution<int>(1, 40)(rng);
        int64_t n = std::uniform_int_distribution<int>(1, 40)(rng);
        if (trial % 11 == 0) m = 1;
        if (trial % 13 == 0) n = 1;
        Tensor a = operand({batch, m, k}, la, dt, rng), b = operand({batch, k, n}, lb, dt, rng);
        Tensor out = empty({batch, m, n}, dt);
        cpu().matmul(out, a, b);
        double tol = dt == DType::bf16 ? 1e-2 : tolerance(dt) * 10;
        check_close(values(out), reference(a, b), tol,
                    "matmul " + std::string(dtype_name(dt)) + " layouts " + std::to_string(la) +
                        "," + std::to_string(lb),
                    double(k));
      }
}

TEST_CASE("matmul handles empty sizes, k == 0 and large batched products") {
  std::mt19937 rng(5);
  Tensor a = random_tensor({2, 3, 0}, DType::f32, rng),
         b = random_tensor({2, 0, 4}, DType::f32, rng);
  Tensor out = empty({2, 3, 4}, DType::f32);
  cpu().matmul(out, a, b);
  CHECK(values(out) == std::vector<double>(24, 0.0));
  Tensor e = empty({0, 3, 4}, DType::f32);
  cpu().matmul(e, empty({0, 3, 2}), empty({0, 2, 4}));
  for (int64_t batch : {1, 9}) {  // one product split into row blocks, and batch-parallel
    int64_t m = batch == 1 ? 200 : 33, k = batch == 1 ? 150 : 47, n = batch == 1 ? 170 : 29;
    Tensor x = random_tensor({batch, m, k}, DType::f32, rng),
           y = permuted_tensor({batch, k, n}, {0, 2, 1}, DType::f32, rng);
    Tensor one = empty({batch, m, n}), two = empty({batch, m, n});
    with_threads(1, [&] { cpu().matmul(one, x, y); });
    with_threads(2, [&] { cpu().matmul(two, x, y); });
    check_close(values(two), reference(x, y), 1e-5, "large matmul", double(k));
    check_close(values(one), values(two), 1e-6, "1 vs 2 threads", double(k));
  }
}

TEST_CASE("matmul split into blocks of output rows matches the reference in every layout") {
  // 2 threads, 100 rows: blocks of 64 and 36 rows (whole multiples of 32 but the last).
  std::mt19937 rng(7);
  const int64_t batch = 2, m = 100, k = 256, n = 256;
  for (int la = 0; la < 5; ++la) {
    Tensor a = operand({batch, m, k}, la, DType::f32, rng),
           b = operand({batch, k, n}, (la + 1) % 5, DType::f32, rng);
    Tensor out = empty({batch, m, n});
    with_threads(2, [&] { cpu().matmul(out, a, b); });
    check_close(values(out), reference(a, b), 1e-5, "row blocks, layout " + std::to_string(la),
                double(k));
  }
}

TEST_CASE("matmul is safe when called from several threads at once") {
  std::mt19937 rng(6);
  Tensor a = random_tensor({1, 160, 160}, DType::f32, rng),
         b = random_tensor({1, 160, 160}, DType::f32, rng);
  std::vector<double> want = reference(a, b);
  std::vector<Tensor> outs(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      outs[t] = empty({1, 160, 160});
      for (int r = 0; r < 3; ++r) cpu().matmul(outs[t], a, b);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) check_close(values(outs[t]), want, 1e-5, "concurrent matmul", 160);
}

// Kernels check their contract (core/op_table.h) only in debug builds; the op layer
// rejects bad arguments in every build (tests/core/test_op_checks.cpp).
#ifndef NDEBUG
TEST_CASE("in debug builds the matmul kernel asserts its contract, naming the op") {
  Tensor out = empty({1, 2, 2});
  CHECK(error_of([&] {
          cpu().matmul(out, empty({1, 2, 3}), empty({1, 4, 2}));
        }).find("matmul") == 0);
  CHECK(error_of([&] {
          cpu().matmul(out, empty({1, 2, 3}, DType::i32), empty({1, 3, 2}, DType::i32));
        }).find("matmul") == 0);
}
#endif

}  // namespace
}  // namespace rg::test
