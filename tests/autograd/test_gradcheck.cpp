// gradcheck for every differentiable op, with broadcasting and non-contiguous inputs.
#include <doctest/doctest.h>

#include "ringgrad.h"

using namespace rg;
using Inputs = std::vector<Tensor>;

namespace {
Tensor r(const Shape& s, uint64_t seed) {
  Generator g{seed, 0};
  return randn(s, kFloat64, kCPU, &g);
}
Tensor pos(const Shape& s, uint64_t seed) {
  Generator g{seed, 0};
  return rand(s, kFloat64, kCPU, &g) + 0.5;
}
void check(const char* name, std::function<Tensor(const Inputs&)> fn, const Inputs& in) {
  GradcheckResult res = gradcheck(fn, in);
  INFO(name << ": " << res.report);
  CHECK(res.ok);
}
}  // namespace

TEST_CASE("gradcheck: binary elementwise ops with broadcasting") {
  Tensor a = r({3, 4}, 1), b = r({4}, 2), c = r({3, 1}, 3);
  check("add", [](const Inputs& x) { return add(x[0], x[1], 0.5); }, {a, b});
  check("sub", [](const Inputs& x) { return sub(x[0], x[1]); }, {a, c});
  check("mul", [](const Inputs& x) { return mul(x[0], x[1]); }, {a, b});
  check("div", [](const Inputs& x) { return div(x[0], x[1]); }, {a, pos({3, 1}, 4)});
  check("pow", [](const Inputs& x) { return pow(x[0], x[1]); }, {pos({3, 4}, 5), r({4}, 6)});
  check("pow scalar", [](const Inputs& x) { return pow(x[0], 3.0); }, {a});
  check("maximum", [](const Inputs& x) { return maximum(x[0], x[1]); }, {a, b});
  check("minimum", [](const Inputs& x) { return minimum(x[0], x[1]); }, {a, c});
  check("where", [](const Inputs& x) { return where(gt(x[0], x[1]), x[0], x[1]); }, {a, b});
}

TEST_CASE("gradcheck: unary ops on non-contiguous inputs") {
  Tensor a = r({4, 3}, 7).t();  // transposed view
  Tensor p = pos({4, 3}, 8).t();
  check("neg", [](const Inputs& x) { return neg(x[0]); }, {a});
  check("exp", [](const Inputs& x) { return exp(x[0]); }, {a});
  check("log", [](const Inputs& x) { return log(x[0]); }, {p});
  check("sqrt", [](const Inputs& x) { return sqrt(x[0]); }, {p});
  check("rsqrt", [](const Inputs& x) { return rsqrt(x[0]); }, {p});
  check("abs", [](const Inputs& x) { return abs(x[0]); }, {a});
  check("tanh", [](const Inputs& x) { return tanh(x[0]); }, {a});
  check("sigmoid", [](const Inputs& x) { return sigmoid(x[0]); }, {a});
  check("relu", [](const Inputs& x) { return relu(x[0]); }, {a});
  check("gelu", [](const Inputs& x) { return gelu(x[0]); }, {a});
  check("sin", [](const Inputs& x) { return sin(x[0]); }, {a});
  check("cos", [](const Inputs& x) { return cos(x[0]); }, {a});
  check("square", [](const Inputs& x) { return square(x[0]); }, {a});
  check("reciprocal", [](const Inputs& x) { return reciprocal(x[0]); }, {p});
  check("clamp", [](const Inputs& x) { return clamp(x[0], -0.5, 0.5); }, {a});
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

TEST_CASE("gradcheck: matmul with batch broadcasting and transposed views") {
  check("2d", [](const Inputs& x) { return matmul(x[0], x[1]); }, {r({3, 4}, 10), r({4, 2}, 11)});
  check("batched x 2d", [](const Inputs& x) { return matmul(x[0], x[1]); }, {r({2, 3, 4}, 12), r({4, 5}, 13)});
  check("broadcast batch", [](const Inputs& x) { return matmul(x[0], x[1]); },
        {r({2, 1, 3, 4}, 14), r({3, 4, 2}, 15)});
  check("transposed", [](const Inputs& x) { return matmul(x[0].t(), x[1]); }, {r({4, 3}, 16), r({4, 2}, 17)});
  check("vector", [](const Inputs& x) { return matmul(x[0], x[1]); }, {r({3, 4}, 18), r({4}, 19)});
  check("linear", [](const Inputs& x) { return linear(x[0], x[1], x[2]); }, {r({2, 3, 4}, 20), r({5, 4}, 21), r({5}, 22)});
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
  check("permute then reshape", [](const Inputs& x) { return x[0].permute({1, 0, 2}).reshape({3, 8}); }, {a});
  check("to f32 and back", [](const Inputs& x) { return x[0].contiguous().clone(); }, {a.transpose(0, 2)});
}

TEST_CASE("gradcheck: fused neural-network ops") {
  check("softmax", [](const Inputs& x) { return softmax(x[0], 1); }, {r({3, 5, 2}, 25)});
  check("log_softmax", [](const Inputs& x) { return log_softmax(x[0], -1); }, {r({4, 6}, 26)});
  check("layer_norm", [](const Inputs& x) { return layer_norm(x[0], {6}, x[1], x[2]); },
        {r({2, 3, 6}, 27), r({6}, 28), r({6}, 29)});
  check("layer_norm no affine", [](const Inputs& x) { return layer_norm(x[0], {6}); }, {r({4, 6}, 30)});
  Tensor idx = tensor(std::vector<int64_t>{1, 3, 1, 0, 4, 3}, {2, 3});
  check("embedding", [idx](const Inputs& x) { return embedding(x[0], idx); }, {r({5, 4}, 31)});
  Tensor targets = tensor(std::vector<int64_t>{2, -100, 0, 4, 1});
  check("cross_entropy mean + ignore", [targets](const Inputs& x) { return cross_entropy(x[0], targets); },
        {r({5, 6}, 32)});
  check("cross_entropy sum", [targets](const Inputs& x) {
    return cross_entropy(x[0], targets, Reduction::sum); }, {r({5, 6}, 33)});
  check("cross_entropy none", [targets](const Inputs& x) {
    return cross_entropy(x[0], targets, Reduction::none); }, {r({5, 6}, 34)});
  check("mse", [](const Inputs& x) { return mse_loss(x[0], x[1]); }, {r({3, 4}, 35), r({3, 4}, 36)});
}
