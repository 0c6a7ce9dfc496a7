// Argument checks live in the op layer (ops/*.cpp): every build rejects a bad shape or dtype
// with one rg::Error naming the op and the value, before any kernel runs. Kernels only
// assert their contract in debug builds (RG_DEBUG_ASSERT). Also the one dtype dispatch
// (core/dispatch.h) that every kernel goes through.
#include <doctest/doctest.h>

#include <string>

#include "core/dispatch.h"
#include "ringgrad.h"

using namespace rg;

namespace {

TEST_CASE("ops reject bad shapes and dtypes with an error naming the op and the value") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(matmul(x, zeros({4, 2})),
                       "matmul: shapes [2,3] and [4,2] cannot be multiplied (3 != 4)", Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}, kInt32), zeros({3, 2}, kInt32)),
                       "matmul: expected floating-point inputs, got int32", Error);
  CHECK_THROWS_WITH_AS(sum(x, {2}), doctest::Contains("sum: dim 2 out of range"), Error);
  CHECK_THROWS_WITH_AS(mean(zeros({2}, kInt32)),
                       "mean: needs a floating-point input, got int32", Error);
  CHECK_THROWS_WITH_AS(amax(zeros({2}, kBool)), "amax: not supported for bool tensors", Error);
  CHECK_THROWS_WITH_AS(argmin(zeros({2}, kBool), 0), "argmin: not supported for bool tensors",
                       Error);
  CHECK_THROWS_WITH_AS(softmax(zeros({2}, kInt64), 0),
                       "softmax: expected a floating-point input, got int64", Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {2}), doctest::Contains("layer_norm: normalized_shape [2]"),
                       Error);
  CHECK_THROWS_WITH_AS(embedding(x, zeros({2})),
                       "embedding: indices must be int64 or int32, got float32", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(x, zeros({3}, kInt64)),
                       doctest::Contains("cross_entropy: logits of shape [2,3] need targets"),
                       Error);
  CHECK_THROWS_WITH_AS(where(x, x, x), "where: condition must be bool, got float32", Error);
}

TEST_CASE("AdamW rejects a parameter dtype its fused update does not take") {
  Tensor p = zeros({3}, kBFloat16);
  p.requires_grad_();
  optim::AdamW opt({p}, {});
  p.set_grad(zeros({3}, kBFloat16));
  CHECK_THROWS_WITH_AS(opt.step(),
                       "AdamW: parameter 0 has dtype bfloat16; the fused update takes float32 "
                       "or float64",
                       Error);
}

TEST_CASE("dispatch_dtype calls the lambda with the storage type of each dtype in its set") {
  auto name_of = [](DType dt) {
    return dispatch_dtype<DTypes::all>(dt, "probe", []<typename T>(TypeTag<T>) {
      return std::string(dtype_name(dtype_of<T>::value));
    });
  };
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32, kInt64, kBool})
    CHECK(name_of(dt) == dtype_name(dt));
  auto size_of = [](DType dt) {
    return dispatch_dtype<DTypes::numeric>(dt, "probe", []<typename T>(TypeTag<T>) {
      return sizeof(T);
    });
  };
  CHECK(size_of(kBFloat16) == 2);
  CHECK(size_of(kInt64) == 8);
}

TEST_CASE("dispatch_dtype rejects a dtype outside its set, naming the op and the set") {
  auto none = []<typename T>(TypeTag<T>) {};
  CHECK_THROWS_WITH_AS(dispatch_dtype<DTypes::f32_f64>(kBFloat16, "adamw", none),
                       "adamw: unsupported dtype bfloat16 (expected float32 or float64)", Error);
  CHECK_THROWS_WITH_AS(dispatch_dtype<DTypes::floating>(kInt32, "softmax", none),
                       "softmax: unsupported dtype int32 (expected float32, float64 or bfloat16)",
                       Error);
  CHECK_THROWS_WITH_AS(dispatch_dtype<DTypes::numeric>(kBool, "max", none),
                       "max: unsupported dtype bool (expected a numeric dtype (not bool))", Error);
  CHECK_NOTHROW(dispatch_dtype<DTypes::floating>(kBFloat16, "softmax", none));
}

TEST_CASE("RG_DEBUG_ASSERT throws in debug builds and is never evaluated in release builds") {
  int evaluated = 0;
  auto fails = [&] {
    ++evaluated;
    return false;
  };
#ifdef NDEBUG
  CHECK_NOTHROW(RG_DEBUG_ASSERT(fails(), "kernel: contract"));
  CHECK(evaluated == 0);
#else
  CHECK_THROWS_WITH_AS(RG_DEBUG_ASSERT(fails(), "kernel: contract ", 7), "kernel: contract 7",
                       Error);
  CHECK(evaluated == 1);
#endif
}

}  // namespace

TEST_CASE("reductions follow their row's rule: prod widens integers, an empty product is 1") {
  Tensor i = tensor(std::vector<int64_t>{2, -3, 4, 5}, {2, 2}).to(kInt32);
  CHECK(prod(i).dtype() == kInt64);
  CHECK(prod(i).item<int64_t>() == -120);
  CHECK(prod(i, {1}, true).to_vector<int64_t>() == std::vector<int64_t>{-6, 20});
  CHECK(prod(zeros({2}, kBool)).dtype() == kInt64);
  CHECK(prod(zeros({3, 0}), {1}).to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(prod(zeros({2, 3}), {-1}).shape() == Shape{2});
  CHECK_THROWS_WITH_AS(prod(zeros({2}), {1}), doctest::Contains("prod: dim 1 out of range"), Error);
  CHECK_THROWS_WITH_AS(amax(zeros({3, 0}), {1}),
                       doctest::Contains("amax: cannot reduce over dim 1"), Error);
}
