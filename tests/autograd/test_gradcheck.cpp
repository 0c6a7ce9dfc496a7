// gradcheck for every differentiable op, with broadcasting and non-contiguous inputs.
#include <doctest/doctest.h>

#include "ringgrad.h"
#include "tests/autograd/gradcheck_helpers.h"
#include "tests/elementwise_cases.h"
#include "tests/reduce_cases.h"

using namespace rg;
using rg::test::check;
using rg::test::Inputs;
using rg::test::r;

// Every differentiable row of the op table (core/op_table.h), on seeded random shapes in
// the op's input range (tests/elementwise_cases.h); unary inputs also as transposed views.
TEST_CASE("gradcheck: every differentiable unary op of the table") {
  for (int i = 0; i < kNumUnaryOps; ++i) {
    const ElementwiseInfo& op = info(UnaryOp(i));
    if (!op.differentiable()) continue;
    auto fn = test::unary_functions().at(op.name);
    test::RandomInputs rnd(3000 + i);
    for (int trial = 0; trial < 3; ++trial) {
      Shape shape = rnd.shape(3);
      Tensor x = rnd.tensor_of(shape, kFloat64, test::unary_cases().at(op.name).x);
      check(op.name, [fn](const Inputs& in) { return fn(in[0]); }, {x});
      if (x.dim() == 2)
        check(op.name, [fn](const Inputs& in) { return fn(in[0].t()); }, {x.t().contiguous()});
    }
  }
}

TEST_CASE("gradcheck: every differentiable binary op of the table, with broadcasting") {
  for (int i = 0; i < kNumBinaryOps; ++i) {
    const ElementwiseInfo& op = info(BinaryOp(i));
    if (!op.differentiable()) continue;
    auto fn = test::binary_functions().at(op.name);
    const test::BinaryCase& ranges = test::binary_cases().at(op.name);
    test::RandomInputs rnd(4000 + i);
    for (int trial = 0; trial < 4; ++trial) {
      Shape full = rnd.shape(3), partner = rnd.broadcastable_to(full);
      bool a_full = trial % 2 == 0;
      Tensor a = rnd.tensor_of(a_full ? full : partner, kFloat64, ranges.a);
      Tensor b = rnd.tensor_of(a_full ? partner : full, kFloat64, ranges.b);
      check(op.name, [fn](const Inputs& in) { return fn(in[0], in[1]); }, {a, b});
    }
  }
}

TEST_CASE("gradcheck: elementwise ops outside the table") {
  Tensor a = r({3, 4}, 1), b = r({4}, 2);
  check("add alpha", [](const Inputs& x) { return add(x[0], x[1], 0.5); }, {a, b});
  check("pow scalar", [](const Inputs& x) { return pow(x[0], 3.0); }, {a});
  check("where", [](const Inputs& x) { return where(gt(x[0], x[1]), x[0], x[1]); }, {a, b});
  check("clamp", [](const Inputs& x) { return clamp(x[0], -0.5, 0.5); }, {r({4, 3}, 7).t()});
  check("gelu tanh", [](const Inputs& x) { return gelu(x[0], "tanh"); }, {a});
}

TEST_CASE("gradcheck: reductions") {
  Tensor a = r({3, 4, 5}, 9);
  check("sum all", [](const Inputs& x) { return sum(x[0]); }, {a});
  check("sum dims", [](const Inputs& x) { return sum(x[0], {0, 2}); }, {a});
  check("sum keepdim", [](const Inputs& x) { return sum(x[0], {-1}, true); }, {a});
  check("mean", [](const Inputs& x) { return mean(x[0], {1}); }, {a});
  check("amax", [](const Inputs& x) { return amax(x[0], {2}); }, {a});
  check("amin", [](const Inputs& x) { return amin(x[0]); }, {a});
}

// Every differentiable row of the reduction table (core/op_table.h) over all dims, some dims
// and one dim with keepdim, on an input and on a transposed view of it.
TEST_CASE("gradcheck: every differentiable reduction of the table") {
  for (ReduceOp op : test::all_reduce_ops()) {
    if (!info(op).differentiable()) continue;
    auto fn = test::reduce_case(op).function;
    REQUIRE_MESSAGE(bool(fn), op_name(op), ": no function in tests/reduce_cases.h");
    Tensor a = r({3, 4, 5}, 20 + static_cast<uint64_t>(op));
    for (const auto& [dims, keepdim] : std::vector<std::pair<std::vector<int64_t>, bool>>{
             {{}, false}, {{0, 2}, false}, {{1}, true}, {{-1}, false}}) {
      check(op_name(op), [fn, dims, keepdim](const Inputs& x) { return fn(x[0], dims, keepdim); },
            {a});
      check(
          op_name(op),
          [fn, dims, keepdim](const Inputs& x) { return fn(x[0].transpose(0, 2), dims, keepdim); },
          {a});
    }
  }
}

// prod's gradient where a slice holds zeros: one zero gets the product of the others, two
// zeros give 0 everywhere (PyTorch's rule); compared with finite differences and by value.
TEST_CASE("gradcheck: prod over slices with no, one and two zeros") {
  Tensor x =
      tensor(std::vector<double>{2, -3, 0.5, 4, 1.5, 0, 7, -2, -1, 0, 3, 0}, {3, 4}, kFloat64);
  check("prod zeros", [](const Inputs& in) { return prod(in[0], {1}); }, {x});
  check("prod all", [](const Inputs& in) { return prod(in[0]); }, {x.narrow(0, 0, 2).contiguous()});
  Tensor leaf = x.clone().requires_grad_();
  prod(leaf, {1}).sum().backward();
  CHECK(leaf.grad().to_vector<double>() ==
        std::vector<double>{-6, 4, -24, -3, 0, -21, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("gradcheck: matmul with batch broadcasting and transposed views") {
  check("2d", [](const Inputs& x) { return matmul(x[0], x[1]); }, {r({3, 4}, 10), r({4, 2}, 11)});
  check("batched x 2d", [](const Inputs& x) { return matmul(x[0], x[1]); },
        {r({2, 3, 4}, 12), r({4, 5}, 13)});
  check("broadcast batch", [](const Inputs& x) { return matmul(x[0], x[1]); },
        {r({2, 1, 3, 4}, 14), r({3, 4, 2}, 15)});
  check("attention heads by stride (batch dims that do not merge)",
        [](const Inputs& x) {
          Tensor q = x[0].reshape({2, 3, 2, 4}).transpose(1, 2);         // [B, H, T, D]
          Tensor kt = x[1].reshape({2, 3, 2, 4}).permute({0, 2, 3, 1});  // [B, H, D, T]
          return matmul(q, kt);
        },
        {r({2, 3, 8}, 30), r({2, 3, 8}, 31)});
  check("transposed", [](const Inputs& x) { return matmul(x[0].t(), x[1]); },
        {r({4, 3}, 16), r({4, 2}, 17)});
  check("vector", [](const Inputs& x) { return matmul(x[0], x[1]); }, {r({3, 4}, 18), r({4}, 19)});
  check("linear", [](const Inputs& x) { return linear(x[0], x[1], x[2]); },
        {r({2, 3, 4}, 20), r({5, 4}, 21), r({5}, 22)});
}

TEST_CASE("gradcheck: linear, one fused node (bias in the GEMM's epilogue)") {
  auto with_bias = [](const Inputs& x) { return linear(x[0], x[1], x[2]); };
  auto without_bias = [](const Inputs& x) { return linear(x[0], x[1]); };
  check("linear 2-D", with_bias, {r({3, 4}, 40), r({5, 4}, 41), r({5}, 42)});
  check("linear 3-D", with_bias, {r({2, 3, 4}, 43), r({5, 4}, 44), r({5}, 45)});
  check("linear 3-D without bias", without_bias, {r({2, 3, 4}, 46), r({5, 4}, 47)});
  check("linear, non-contiguous 3-D input (rows by stride)",
        [](const Inputs& x) { return linear(x[0].narrow(2, 1, 4), x[1], x[2]); },
        {r({2, 3, 6}, 48), r({5, 4}, 49), r({5}, 50)});
  check("linear, transposed 2-D input",
        [](const Inputs& x) { return linear(x[0].t(), x[1], x[2]); },
        {r({4, 3}, 63), r({5, 4}, 64), r({5}, 65)});
  check("linear, input with leading dims that do not merge (composed)",
        [](const Inputs& x) { return linear(x[0].transpose(0, 1), x[1], x[2]); },
        {r({3, 2, 4}, 51), r({5, 4}, 52), r({5}, 53)});
  check("linear, transposed weight", [](const Inputs& x) { return linear(x[0], x[1].t(), x[2]); },
        {r({2, 3, 4}, 54), r({4, 5}, 55), r({5}, 56)});
  check("linear, one output", with_bias, {r({3, 4}, 57), r({1, 4}, 58), r({1}, 59)});
  Tensor x = r({2, 3, 4}, 60).requires_grad_(), w = r({5, 4}, 61).requires_grad_();
  Tensor y = linear(x, w, r({5}, 62).requires_grad_());
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "linear");
}

TEST_CASE("gradcheck: views and shape ops") {
  Tensor a = r({2, 3, 4}, 23);
  check("reshape", [](const Inputs& x) { return x[0].reshape({6, 4}); }, {a});
  check("permute", [](const Inputs& x) { return x[0].permute({2, 0, 1}); }, {a});
  check("narrow", [](const Inputs& x) { return x[0].narrow(2, 1, 2); }, {a});
  check("slice step", [](const Inputs& x) { return x[0].slice(1, 0, 3, 2); }, {a});
  check("select", [](const Inputs& x) { return x[0].select(0, 1); }, {a});
  check("expand", [](const Inputs& x) { return x[0].unsqueeze(0).expand({3, 2, 3, 4}); }, {a});
  check("squeeze", [](const Inputs& x) { return x[0].narrow(0, 0, 1).squeeze(0); }, {a});
  check("cat", [](const Inputs& x) { return cat({x[0], x[1]}, 1); }, {a, r({2, 2, 4}, 24)});
  check("permute then reshape",
        [](const Inputs& x) {
          return x[0].permute({1, 0, 2}).reshape({3, 8});
        },
        {a});
  check("to f32 and back", [](const Inputs& x) { return x[0].contiguous().clone(); },
        {a.transpose(0, 2)});
}

TEST_CASE("gradcheck: fused attention, causal or not, across the kernel's 64-row tiles") {
  auto sdpa = [](bool causal) {
    return [causal](const Inputs& x) {
      return scaled_dot_product_attention(x[0], x[1], x[2], causal, 0.7);
    };
  };
  check("attention causal", sdpa(true),
        {r({2, 3, 5, 3}, 40), r({2, 3, 5, 3}, 41), r({2, 3, 5, 4}, 42)});
  check("attention T != S", sdpa(false), {r({2, 4, 3}, 43), r({2, 6, 3}, 44), r({2, 6, 2}, 45)});
  check("attention causal T > S", sdpa(true),
        {r({1, 7, 2}, 46), r({1, 4, 2}, 47), r({1, 4, 3}, 48)});
  check("attention causal, 70 rows", sdpa(true),
        {r({1, 70, 2}, 49), r({1, 70, 2}, 50), r({1, 70, 2}, 51)});
  check("attention default scale",
        [](const Inputs& x) { return scaled_dot_product_attention(x[0], x[1], x[2]); },
        {r({3, 4}, 52), r({5, 4}, 53), r({5, 2}, 54)});
  check("packed qkv attention, 2 heads",
        [](const Inputs& x) { return packed_qkv_attention(x[0], 2); }, {r({2, 5, 12}, 55)});
  check("packed qkv attention, not causal, a transposed qkv",
        [](const Inputs& x) { return packed_qkv_attention(x[0], 1, false); },
        {r({1, 6, 4}, 56).transpose(1, 2)});
}

TEST_CASE("gradcheck: fused neural-network ops") {
  check("softmax", [](const Inputs& x) { return softmax(x[0], 1); }, {r({3, 5, 2}, 25)});
  check("log_softmax", [](const Inputs& x) { return log_softmax(x[0], -1); }, {r({4, 6}, 26)});
  check("layer_norm", [](const Inputs& x) { return layer_norm(x[0], {6}, x[1], x[2]); },
        {r({2, 3, 6}, 27), r({6}, 28), r({6}, 29)});
  check("layer_norm no affine", [](const Inputs& x) { return layer_norm(x[0], {6}); },
        {r({4, 6}, 30)});
  Tensor idx = tensor(std::vector<int64_t>{1, 3, 1, 0, 4, 3}, {2, 3});
  check("embedding", [idx](const Inputs& x) { return embedding(x[0], idx); }, {r({5, 4}, 31)});
  Tensor targets = tensor(std::vector<int64_t>{2, -100, 0, 4, 1});
  check("cross_entropy mean + ignore",
        [targets](const Inputs& x) { return cross_entropy(x[0], targets); }, {r({5, 6}, 32)});
  check("cross_entropy sum",
        [targets](const Inputs& x) { return cross_entropy(x[0], targets, Reduction::sum); },
        {r({5, 6}, 33)});
  check("cross_entropy none",
        [targets](const Inputs& x) { return cross_entropy(x[0], targets, Reduction::none); },
        {r({5, 6}, 34)});
  check("mse", [](const Inputs& x) { return mse_loss(x[0], x[1]); },
        {r({3, 4}, 35), r({3, 4}, 36)});
}

TEST_CASE("gradcheck: indexing, scans and sorts") {
  Tensor idx = tensor(std::vector<int64_t>{2, 0, 2, 1, 1, 3, 0, 0}, {2, 4});  // repeats
  check("gather", [idx](const Inputs& x) { return gather(x[0], 1, idx); }, {r({2, 5}, 40)});
  check("gather of a transposed input",
        [idx](const Inputs& x) { return gather(x[0].t(), 0, idx.t().contiguous()); },
        {r({5, 4}, 41)});
  // scatter's src gradient holds where each position is written once (as PyTorch's)
  Tensor unique = tensor(std::vector<int64_t>{2, 0, 3, 1, 1, 3, 0, 4}, {2, 4});
  check("scatter", [unique](const Inputs& x) { return scatter(x[0], -1, unique, x[1]); },
        {r({2, 5}, 42), r({2, 4}, 43)});
  check("scatter_add", [idx](const Inputs& x) { return scatter_add(x[0], 1, idx, x[1]); },
        {r({3, 6}, 44), r({2, 4}, 45)});
  Tensor rows = tensor(std::vector<int64_t>{3, 0, 3});
  check("index_select", [rows](const Inputs& x) { return index_select(x[0], 0, rows); },
        {r({4, 3}, 46)});
  check("index_add", [rows](const Inputs& x) { return index_add(x[0], 1, rows, x[1], 0.5); },
        {r({2, 4}, 47), r({2, 3}, 48)});
  Tensor two = tensor(std::vector<int64_t>{3, 0});
  check("index_put", [two](const Inputs& x) { return index_put(x[0], 0, two, x[1]); },
        {r({4, 3}, 49), r({3}, 50)});
  check("cumsum", [](const Inputs& x) { return cumsum(x[0], 1); }, {r({3, 7}, 51)});
  check("cumsum of a transposed input", [](const Inputs& x) { return cumsum(x[0].t(), -1); },
        {r({5, 2}, 52)});
  check("sort values", [](const Inputs& x) { return sort(x[0], 0, true).values; }, {r({6, 3}, 53)});
  check("topk values", [](const Inputs& x) { return topk(x[0], 2, -1).values; }, {r({3, 5}, 54)});
  check("max along a dim", [](const Inputs& x) { return max(x[0], 1).values; }, {r({4, 5}, 55)});
  check("min along a dim, keepdim", [](const Inputs& x) { return min(x[0], 0, true).values; },
        {r({4, 5}, 56)});
}
