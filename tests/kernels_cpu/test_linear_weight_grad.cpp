// linear_weight_grad: dweight [N,K] = sum over b of dy[b]^T @ x[b], each sequence's product
// in the dtype and their sum in double, against an f64 reference, against the composition it
// replaces (matmul per sequence, then the reduce kernel's sum), across thread counts, and at
// every tile edge (rows 1-6 of a register tile, 16-64 columns, single columns).
#include "tests/kernels_cpu/guarded_buffer.h"
#include "tests/kernels_cpu/helpers.h"

namespace rg::test {
namespace {

// Sum over b and t of dy[b,t,n] * x[b,t,k], in double.
std::vector<double> reference(const Tensor& dy, const Tensor& x) {
  const int64_t B = dy.size(0), T = dy.size(1), N = dy.size(2), K = x.size(2);
  std::vector<double> vdy = values(dy), vx = values(x), out(N * K, 0.0);
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) out[n * K + k] += vdy[r * N + n] * vx[r * K + k];
  return out;
}

// The composition: one matmul per sequence into [B,N,K], then the sum over b.
Tensor composed(const Tensor& dy, const Tensor& x) {
  const int64_t B = dy.size(0), N = dy.size(2), K = x.size(2);
  Tensor products = empty({B, N, K}, dy.dtype()), out = empty({1, N, K}, dy.dtype());
  cpu().matmul(products, make_view(dy, {B, N, dy.size(1)}, {dy.stride(0), 1, N}, 0), x);
  if (B == 1) return products;  // values() reads [1,N,K] as [N,K]
  cpu().reduce(ReduceOp::sum, out, products, {0});
  return out;
}

TEST_CASE("linear_weight_grad matches the f64 reference and the composition at every tile edge") {
  std::mt19937 rng(11);
  const int64_t shapes[][4] = {{3, 5, 13, 70},   {2, 9, 6, 64}, {1, 4, 7, 16}, {4, 3, 5, 3},
                               {2, 64, 12, 128}, {3, 7, 1, 49}, {1, 1, 2, 130}};
  for (DType dt : {DType::f32, DType::f64})
    for (const auto& s : shapes) {
      const int64_t B = s[0], T = s[1], N = s[2], K = s[3];
      Tensor dy = random_tensor({B, T, N}, dt, rng), x = random_tensor({B, T, K}, dt, rng);
      Tensor dweight = empty({N, K}, dt);
      cpu().linear_weight_grad(dweight, dy, x);
      const std::string what =
          str("linear_weight_grad ", dtype_name(dt), " B=", B, " T=", T, " N=", N, " K=", K);
      check_close(values(dweight), reference(dy, x), tolerance(dt) * 10, what, double(B * T));
      // The composition rounds each sequence's product to the dtype first, as the kernel does.
      check_close(values(dweight), values(composed(dy, x)), tolerance(dt), what + " vs composed",
                  double(T));
    }
}

TEST_CASE("linear_weight_grad gives the same bits on 1 and 2 threads, and zeros for no rows") {
  std::mt19937 rng(12);
  Tensor dy = random_tensor({8, 64, 384}, DType::f32, rng),
         x = random_tensor({8, 64, 128}, DType::f32, rng);
  Tensor one = empty({384, 128}), two = empty({384, 128});
  with_threads(1, [&] { cpu().linear_weight_grad(one, dy, x); });
  with_threads(2, [&] { cpu().linear_weight_grad(two, dy, x); });
  CHECK(values(one) == values(two));
  Tensor none = empty({5, 20});
  fill_random(none, rng);
  cpu().linear_weight_grad(none, empty({0, 3, 5}), empty({0, 3, 20}));
  CHECK(values(none) == std::vector<double>(100, 0.0));
}

TEST_CASE("linear_weight_grad reads nothing past its operands' ends") {
  // Regression: the plain loop of the non-AVX-512 build read dy beyond its last row (a SIGSEGV
  // in bench/ddp's 16-wide model on an AVX2 CPU). Each operand here ends where a guard page
  // starts, at the shapes of narrow models and at every row-tile remainder.
  std::mt19937 rng(13);
  const int64_t shapes[][4] = {{1, 16, 512, 16}, {1, 16, 48, 16}, {2, 5, 7, 16},  {1, 3, 1, 8},
                               {3, 17, 13, 64},  {1, 2, 5, 24},   {2, 7, 11, 70}, {1, 1, 3, 1}};
  for (const auto& s : shapes) {
    const int64_t B = s[0], T = s[1], N = s[2], K = s[3];
    GuardedBuffer dy_memory(size_t(B * T * N) * 4), x_memory(size_t(B * T * K) * 4);
    GuardedBuffer out_memory(size_t(N * K) * 4);
    Tensor dy = from_blob(dy_memory.data(), {B, T, N}), x = from_blob(x_memory.data(), {B, T, K});
    Tensor dweight = from_blob(out_memory.data(), {N, K});
    fill_random(dy, rng);
    fill_random(x, rng);
    cpu().linear_weight_grad(dweight, dy, x);
    check_close(values(dweight), reference(dy, x), tolerance(DType::f32) * 10,
                str("guarded linear_weight_grad B=", B, " T=", T, " N=", N, " K=", K),
                double(B * T));
  }
}

}  // namespace
}  // namespace rg::test
