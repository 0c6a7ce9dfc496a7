// core/ by itself: this program links only the ringgrad_core library (no kernels, autograd
// or ops), so building it proves core names nothing above it, and its tests check what
// core does alone: tensors over host memory, printing, the device registry (cpu only until
// the kernels layer installs its loader), the op table as data, errors.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_interface.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/op_table.h"
#include "core/shape.h"
#include "core/tensor.h"

using namespace rg;

TEST_CASE("core alone: cpu tensors, views and their values in row-major order") {
  Tensor t = empty({2, 3}, DType::f32);
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.strides() == Strides{3, 1});
  CHECK(t.is_contiguous());
  float* p = t.data<float>();
  for (int i = 0; i < 6; ++i) p[i] = static_cast<float>(i);
  CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  // The transpose as a view: values come out in the view's row-major order.
  Tensor tt = make_view(t, {3, 2}, {1, 3}, 0);
  CHECK_FALSE(tt.is_contiguous());
  CHECK(tt.to_vector<int64_t>() == std::vector<int64_t>{0, 3, 1, 4, 2, 5});
  // A broadcast view (stride 0) and an offset one-element view.
  CHECK(make_view(t, {2, 2}, {0, 1}, 4).to_vector<double>() == std::vector<double>{4, 5, 4, 5});
  CHECK(make_view(t, {}, {}, 5).item() == 5.0);
  CHECK_THROWS_WITH_AS(t.item(), doctest::Contains("item: tensor of shape [2,3] has 6 elements"),
                       Error);
  CHECK_THROWS_WITH_AS(t.data<double>(), doctest::Contains("tensor is float32, asked for float64"),
                       Error);
  CHECK(empty({0, 4}).to_vector<float>().empty());
}

TEST_CASE("core alone: from_blob borrows memory; every dtype reads back") {
  std::vector<int64_t> values{7, -2, 9};
  Tensor t = from_blob(values.data(), {3}, DType::i64);
  values[1] = 40;  // not copied
  CHECK(t.to_vector<int64_t>() == std::vector<int64_t>{7, 40, 9});
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::b8}) {
    Tensor x = empty({2}, d);
    std::memset(x.data_ptr(), 0, x.nbytes());
    CHECK(x.to_vector<double>() == std::vector<double>{0, 0});
  }
}

TEST_CASE("core alone: repr prints values, dtype and the autograd slot through its interface") {
  std::vector<double> values{1.5, -2, 1e9};
  Tensor t = from_blob(values.data(), {3}, DType::f64);
  CHECK(repr(t) == "tensor([1.5000, -2.0000, 1.0000e+09], dtype=float64)");
  struct FakeMeta : AutogradMetaInterface {
    bool flag = true;
    const char* fn = nullptr;
    bool requires_grad_flag() const override { return flag; }
    const char* grad_fn_name() const override { return fn; }
  };
  auto meta = std::make_shared<FakeMeta>();
  t.impl()->autograd = meta;
  CHECK(repr(t) == "tensor([1.5000, -2.0000, 1.0000e+09], dtype=float64, requires_grad=True)");
  meta->fn = "MulBackward";
  CHECK(repr(t) == "tensor([1.5000, -2.0000, 1.0000e+09], dtype=float64, grad_fn=<MulBackward>)");
}

TEST_CASE("core alone: only the cpu device and no kernels exist without the kernels layer") {
  CHECK(device_available(DeviceType::cpu));
  CHECK_FALSE(device_available(DeviceType::sim));
  CHECK_THROWS_WITH_AS(empty({2}, DType::f32, Device::parse("sim")),
                       doctest::Contains("device sim: no backend registered for it"), Error);
  for (DeviceType d : {DeviceType::cpu, DeviceType::sim, DeviceType::cuda}) {
    const KernelTable& table = unchecked_kernel_table(d);
    bool no_unary = table.unary == nullptr, no_copy = table.copy == nullptr;
    CHECK(no_unary);
    CHECK(no_copy);
  }
  CHECK(Device::parse("cuda:1").str() == "cuda:1");
  CHECK_THROWS_WITH_AS(Device::parse("tpu"), doctest::Contains("unknown device 'tpu'"), Error);
}

TEST_CASE("core alone: the op table as data, shapes, dtypes and the hash") {
  CHECK(std::string(op_name(BinaryOp::add)) == "add");
  CHECK(info(BinaryOp::add).gradient_is_g[0]);
  CHECK(info(UnaryOp::exp).rule == DTypeRule::floating);
  CHECK_FALSE(info(BinaryOp::eq).differentiable());
  CHECK(std::string(op_name(ReduceOp::argmax)) == "argmax");
  CHECK(broadcast_shapes({2, 1}, {3}, "add") == Shape{2, 3});
  CHECK_THROWS_WITH_AS(broadcast_shapes({2}, {3}, "add"), doctest::Contains("add"), Error);
  CHECK(promote_types(DType::i64, DType::f32) == DType::f32);
  CHECK(itemsize(DType::bf16) == 2);
  CHECK(fnv1a("a", 1) == 0xaf63dc4c8601ec8cull);  // the published FNV-1a 64 value of "a"
}
