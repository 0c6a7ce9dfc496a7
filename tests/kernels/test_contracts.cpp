// Kernel contracts (kernels/contracts.h), written once for every backend: the checks name
// the op, the argument and the value (layernorm, softmax, reduce, matmul, attention,
// cross_entropy, embedding); and a kernel called with a violated precondition gives the same
// message on cpu and on sim/cuda (debug builds; release builds evaluate no contract, so both
// backends stay silent). The violations below are safe to run unchecked.
#include <functional>
#include <string>
#include <vector>

#include "kernels/contracts.h"
#include "tests/error_of.h"
#include "tests/kernels/helpers.h"

using namespace rg;
using namespace rg::test;

namespace {

// One violated precondition: the kernel call on a device's table and its tensors (cpu
// tensors, mirrored to the device).
struct Violation {
  const char* what;
  std::string message;  // the contract's
  std::function<void(const KernelTable&, const std::vector<Tensor>&)> call;
  std::vector<Tensor> tensors;
};

std::vector<Violation> violations() {
  Tensor x = random_tensor({2, 3}, DType::f32, 1);
  Tensor out = empty({2, 3}, DType::f32), bad_stats = empty({3}, DType::f32);
  Tensor rows = empty({3, 1}, DType::f32);
  return {
      {"softmax dim",
       "softmax: dim 2 out of range for shape [2,3]",
       [](const KernelTable& k, const std::vector<Tensor>& t) { k.softmax(t[0], t[1], 2, false); },
       {out, x}},
      {"layernorm stats size",
       "layernorm: mean/rstd must be contiguous with 2 elements, got 3 and 3",
       [](const KernelTable& k, const std::vector<Tensor>& t) {
         k.layernorm(t[0], t[1], t[2], t[3], Tensor(), Tensor(), 1e-5);
       },
       {out, bad_stats, bad_stats, x}},
      {"reduce output size",
       "sum: output has 3 elements, expected 2",
       [](const KernelTable& k, const std::vector<Tensor>& t) {
         k.reduce(ReduceOp::sum, t[0], t[1], {1});
       },
       {rows, x}},
  };
}

TEST_CASE("kernel contracts name the op, the argument and the value") {
  Tensor x = empty({2, 3}, DType::f32), out = empty({2, 3}, DType::f32);
  CHECK(error_of([&] { check_softmax(out, x, 2, true); }) ==
        "log_softmax: dim 2 out of range for shape [2,3]");
  CHECK(error_of([&] {
          check_softmax(empty({3, 2}, DType::f32), x, 1, false);
        }) == "softmax: output [3,2] (float32) does not match the input [2,3] (float32)");
  CHECK(error_of([&] {
          check_layernorm(out, empty({3}, DType::f32), empty({2}, DType::f32), x);
        }) == "layernorm: mean/rstd must be contiguous with 2 elements, got 3 and 2");
  Tensor stats = empty({2}, DType::f32);
  CHECK(error_of([&] {
          check_layernorm_backward(empty({3, 2}, DType::f32), x, stats, stats);
        }) == "layernorm_backward: dx must be contiguous like x [2,3], got [3,2]");
  CHECK(error_of([&] { check_layernorm(out, stats, stats, x); }) == "(no error)");
  Tensor f64_stats = empty({2}, DType::f64);
  CHECK(error_of([&] { check_layernorm(out, f64_stats, f64_stats, x); }) ==
        "layernorm: mean/rstd must be float32 for float32 input, got float64 and float64");
  CHECK(error_of([&] {
          check_reduce(ReduceOp::amax, empty({2, 1}, DType::f32), empty({2, 0}, DType::f32), {1});
        }) == "amax: cannot reduce an empty dimension of shape [2,0]");
  CHECK(error_of([&] {
          check_reduce(ReduceOp::argmax, empty({2, 1}, DType::f32), x, {1});
        }) == "argmax: output dtype float32 does not match int64");
  CHECK(error_of([&] {
          check_reduce(ReduceOp::sum, empty({2, 1}, DType::f32), x, {1, 1});
        }) == "sum: dims must be sorted and unique");
  CHECK(error_of([&] {
          check_matmul(empty({1, 2, 2}, DType::f32), empty({1, 2, 3}, DType::f32),
                       empty({1, 4, 2}, DType::f32));
        }) == "matmul: shapes [1,2,3] and [1,4,2] cannot be multiplied into [1,2,2]");
  CHECK(error_of([&] { check_attention("attention", x, x, x); }) ==
        "attention: kernel needs contiguous [B, T, D] operands, got q [2,3], k [2,3], v [2,3]");
  CHECK(error_of([&] { check_cross_entropy(empty({2}, DType::f32), x, empty({3}, DType::i64)); }) ==
        "cross_entropy: 3 targets for logits [2,3]");
  CHECK(error_of([&] {
          check_cross_entropy_backward(out, x, empty({2}, DType::i32), empty({2}, DType::f64));
        }) == "cross_entropy_backward: dloss [2] (float64) does not match logits [2,3] (float32)");
  CHECK(error_of([&] {
          check_embedding(empty({2, 4}, DType::f32), x, empty({2}, DType::i64));
        }) == "embedding: out [2,4] (float32) does not match 2 indices and weight [2,3] (float32)");
  CHECK(error_of([&] { check_embedding_backward(x, x, empty({2}, DType::f32)); }) ==
        "embedding_backward: indices must be int64 or int32, got float32");
  CHECK(layernorm_stats_dtype(DType::bf16) == DType::f32);
  CHECK(layernorm_stats_dtype(DType::f64) == DType::f64);
  SoftmaxGeometry g = softmax_geometry(empty({2, 3, 4, 5}, DType::f32), 1);
  CHECK((g.outer == 2 && g.dim == 3 && g.inner == 20));
}

TEST_CASE("RG_KERNEL_CONTRACT evaluates its check in debug builds only") {
  int evaluated = 0;
  auto check = [&] {
    ++evaluated;
    RG_FAIL("kernel: contract");
  };
#ifdef NDEBUG
  CHECK_NOTHROW(RG_KERNEL_CONTRACT(check()));
  CHECK(evaluated == 0);
#else
  CHECK_THROWS_WITH_AS(RG_KERNEL_CONTRACT(check()), "kernel: contract", Error);
  CHECK(evaluated == 1);
#endif
}

}  // namespace

GPU_KERNEL_TEST(a_violated_contract_gives_the_cpu_message) {
  for (const Violation& v : violations()) {
    CAPTURE(std::string(v.what));
    std::vector<Tensor> on_device;
    for (const Tensor& t : v.tensors) on_device.push_back(mirror(t, device));
    std::string cpu = error_of([&] { v.call(cpu_kernels(), v.tensors); });
    std::string gpu = error_of([&] { v.call(kernels_of(device), on_device); });
    CHECK(gpu == cpu);
#ifdef NDEBUG
    CHECK(cpu == "(no error)");
#else
    CHECK(cpu == v.message);
#endif
  }
}
