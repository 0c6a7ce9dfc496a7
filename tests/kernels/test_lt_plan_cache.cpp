// linear's cuBLASLt plan cache (kernels/cuda/lt_plan_cache.cuh) on sim, where the shim counts
// heuristic queries and descriptors: a repeated linear builds nothing, a different
// epilogue, alignment or TF32 setting gets its own plan, "no algorithm" is remembered too,
// and the results stay those of the cpu linear. Each test uses shapes of its own, since
// plans live as long as the process.
#include "kernels/cuda/stream.h"
#include "kernels/sim/cublas_shim.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

const Device kSim(DeviceType::sim);

// The sim linear of (x, w, bias) (bias may be undefined), checked against the cpu's.
void linear_matches_cpu(const Tensor& x, const Tensor& w, const Tensor& bias) {
  Tensor want = empty({x.size(0), w.size(0)}, x.dtype());
  cpu_kernels().linear(want, x, w, bias);
  Tensor got = empty(want.shape(), x.dtype(), kSim);
  kernels_of(kSim).linear(got, mirror(x, kSim), mirror(w, kSim),
                          bias.defined() ? mirror(bias, kSim) : Tensor());
  expect_close(got, want, allow_tf32() ? 1e-2 : 1e-4, "sim linear");
}

uint64_t queries() { return sim::lt_shim_counters().heuristic_queries; }
uint64_t descriptors() { return sim::lt_shim_counters().descriptors_created; }

struct RestoreTf32 {
  ~RestoreTf32() { set_allow_tf32(false); }
};

}  // namespace

TEST_CASE("a repeated linear reuses its cuBLASLt plan: no new descriptors, no heuristic") {
  Tensor x = random_tensor({21, 37}, DType::f32, 1), w = random_tensor({19, 37}, DType::f32, 2);
  Tensor bias = random_tensor({19}, DType::f32, 3);
  const uint64_t q0 = queries(), d0 = descriptors();
  linear_matches_cpu(x, w, bias);
  CHECK(queries() == q0 + 1);
  CHECK(descriptors() == d0 + 1);
  for (int i = 0; i < 3; ++i) linear_matches_cpu(x, w, bias);  // fresh buffers, same key
  linear_matches_cpu(random_tensor({21, 37}, DType::f32, 4), w, random_tensor({19}, DType::f32, 5));
  CHECK(queries() == q0 + 1);
  CHECK(descriptors() == d0 + 1);
}

TEST_CASE("epilogue, alignment, dtype and TF32 each get a plan of their own") {
  RestoreTf32 restore;
  Tensor x = random_tensor({23, 41}, DType::f32, 6), w = random_tensor({17, 41}, DType::f32, 7);
  Tensor bias = random_tensor({17}, DType::f32, 8);
  const uint64_t q0 = queries();
  linear_matches_cpu(x, w, bias);
  linear_matches_cpu(x, w, Tensor());  // no bias: the default epilogue
  CHECK(queries() == q0 + 2);
  // x one element into its storage: 4-byte instead of 256-byte aligned
  Tensor shifted = make_view(random_tensor({23 * 41 + 1}, DType::f32, 9), {23, 41}, {41, 1}, 1);
  linear_matches_cpu(shifted, w, bias);
  CHECK(queries() == q0 + 3);
  linear_matches_cpu(random_tensor({23, 41}, DType::bf16, 10),
                     random_tensor({17, 41}, DType::bf16, 11), Tensor());
  CHECK(queries() == q0 + 4);
  set_allow_tf32(true);
  linear_matches_cpu(x, w, bias);
  CHECK(queries() == q0 + 5);
  set_allow_tf32(false);
  linear_matches_cpu(x, w, bias);  // each of the five is cached now
  linear_matches_cpu(x, w, Tensor());
  linear_matches_cpu(shifted, w, bias);
  CHECK(queries() == q0 + 5);
}

TEST_CASE("a plan without an algorithm is cached: the fallback runs without asking again") {
  Tensor x = random_tensor({13, 29}, DType::f32, 12), w = random_tensor({11, 29}, DType::f32, 13);
  Tensor bias = random_tensor({11}, DType::f32, 14);
  const uint64_t q0 = queries();
  sim::lt_shim_offer_no_algorithm(true);
  linear_matches_cpu(x, w, bias);  // the prefill + GEMM fallback
  CHECK(queries() == q0 + 1);
  sim::lt_shim_offer_no_algorithm(false);
  linear_matches_cpu(x, w, bias);  // still the fallback: the plan remembers
  CHECK(queries() == q0 + 1);
}
