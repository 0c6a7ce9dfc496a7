// Module behaviour: registration order and names, state_dict round trip and its errors,
// train/eval, zero_grad, in-place dtype conversion, layer inits.
#include <doctest/doctest.h>

#include <cmath>

#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;
using rg::nn_test::rel_err;

TEST_CASE("MLP lists parameters in registration order with dotted names") {
  Generator gen{7, 0};
  auto mlp = std::make_shared<MLP>(std::vector<int64_t>{4, 8, 3}, Activation::relu, true, &gen);
  auto named = mlp->named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "0.weight");
  CHECK(named[1].first == "0.bias");
  CHECK(named[2].first == "2.weight");
  CHECK(named[3].first == "2.bias");
  CHECK(named[0].second.shape() == Shape{8, 4});
  CHECK(named[2].second.shape() == Shape{3, 8});
  CHECK(mlp->num_parameters() == 8 * 4 + 8 + 3 * 8 + 3);
  for (const Tensor& p : mlp->parameters()) CHECK(p.requires_grad());
  CHECK(mlp->forward(ones({5, 4})).shape() == Shape{5, 3});
}

TEST_CASE("Linear init stays within PyTorch's bound 1/sqrt(in) and depends only on the seed") {
  Generator g1{3, 0}, g2{3, 0};
  Linear a(25, 40, true, &g1), b(25, 40, true, &g2);
  CHECK(equal(a.weight, b.weight));
  CHECK(equal(a.bias, b.bias));
  CHECK(amax(abs(a.weight)).item() <= 0.2);
  CHECK(amax(abs(a.weight)).item() > 0.15);  // uses the range
  CHECK_THROWS_WITH_AS(a.forward(ones({2, 24})), doctest::Contains("linear: input of shape [2,24]"),
                       Error);
}

TEST_CASE("linear rejects a bias that is not [out], naming linear and the shapes") {
  Tensor x = ones({2, 4}), w = ones({3, 4});
  CHECK_THROWS_WITH_AS(linear(x, w, ones({4})),
                       doctest::Contains("linear: bias must have shape [3]"), Error);
  CHECK_THROWS_WITH_AS(linear(x, w, ones({1, 3})), doctest::Contains("got bias of shape [1,3]"),
                       Error);
  CHECK(linear(x, w, ones({3})).shape() == Shape{2, 3});
}

TEST_CASE("linear of leading dims equals one product per row, bias added once") {
  Generator g{5, 0};
  Tensor x = randn({2, 3, 4}, kFloat64, kCPU, &g), w = randn({5, 4}, kFloat64, kCPU, &g);
  Tensor b = randn({5}, kFloat64, kCPU, &g);
  Tensor want = add(matmul(x, w.t()), b);
  CHECK(allclose(linear(x, w, b), want, 1e-12, 1e-12));
  CHECK(allclose(linear(x.transpose(0, 1), w, b), add(matmul(x.transpose(0, 1), w.t()), b), 1e-12,
                 1e-12));
  CHECK(allclose(linear(x, w), matmul(x, w.t()), 1e-12, 1e-12));
}

TEST_CASE("state_dict round trip restores every value into the same tensors") {
  Generator g1{1, 0}, g2{2, 0};
  auto src = std::make_shared<MLP>(std::vector<int64_t>{3, 5, 2}, Activation::tanh, true, &g1);
  auto dst = std::make_shared<MLP>(std::vector<int64_t>{3, 5, 2}, Activation::tanh, true, &g2);
  Tensor w_before = dst->parameters()[0];
  CHECK_FALSE(equal(src->parameters()[0], dst->parameters()[0]));
  dst->load_state_dict(src->state_dict());
  CHECK(dst->parameters()[0].is_same(w_before));
  auto sd = src->state_dict(), dd = dst->state_dict();
  REQUIRE(sd.keys() == dd.keys());
  for (const auto& [name, t] : sd) CHECK(equal(t, dd.at(name)));
  Tensor x = rand({4, 3});
  CHECK(equal(src->forward(x), dst->forward(x)));
}

TEST_CASE("load_state_dict names missing, unexpected and mis-shaped keys in one error") {
  auto model = std::make_shared<MLP>(std::vector<int64_t>{3, 5, 2});
  StateDict dict = model->state_dict();
  dict.erase("0.bias");
  dict.insert("2.weight", zeros({2, 6}));
  dict.insert("extra.weight", zeros({1}));
  try {
    model->load_state_dict(dict);
    FAIL("expected rg::Error");
  } catch (const Error& e) {
    std::string msg = e.what();
    CHECK(msg.find("missing keys: 0.bias") != std::string::npos);
    CHECK(msg.find("unexpected keys: extra.weight") != std::string::npos);
    CHECK(msg.find("mis-shaped keys: 2.weight (checkpoint [2,6], model [2,5])") !=
          std::string::npos);
  }
  // Non-strict still refuses shape mismatches but accepts missing/unexpected keys.
  CHECK_THROWS_AS(model->load_state_dict(dict, false), Error);
  dict.insert("2.weight", zeros({2, 5}));
  model->load_state_dict(dict, false);
  CHECK(amax(abs(model->parameters()[2])).item() == 0.0);
}

TEST_CASE("train/eval switches dropout; masks repeat for the same seed") {
  auto net = std::make_shared<Sequential>(
      std::vector<std::shared_ptr<Module>>{std::make_shared<Dropout>(0.5, 11)});
  auto twin = std::make_shared<Dropout>(0.5, 11);
  Tensor x = ones({1000});
  CHECK(net->is_training());
  Tensor y = net->forward(x);
  CHECK(equal(y, twin->forward(x)));
  double zeros_frac = 1.0 - mean(ne(y, scalar_tensor(0.0)).to(DType::f32)).item();
  CHECK(zeros_frac > 0.4);
  CHECK(zeros_frac < 0.6);
  CHECK(amax(y).item() == doctest::Approx(2.0));
  net->eval();
  CHECK_FALSE(net->child("0")->is_training());
  CHECK(equal(net->forward(x), x));
  net->train();
  CHECK_FALSE(equal(net->forward(x), y));  // the generator moved on
}

TEST_CASE("zero_grad clears or zeroes gradients") {
  auto lin = std::make_shared<Linear>(3, 2);
  lin->forward(ones({1, 3})).sum().backward();
  REQUIRE(lin->weight.grad().defined());
  lin->zero_grad(false);
  CHECK(lin->weight.grad().defined());
  CHECK(amax(abs(lin->weight.grad())).item() == 0.0);
  lin->zero_grad();
  CHECK_FALSE(lin->weight.grad().defined());
}

TEST_CASE("to(dtype) converts in place and keeps parameter identity") {
  auto lin = std::make_shared<Linear>(3, 2);
  Tensor w = lin->weight;
  Tensor w32 = clone(w);
  lin->forward(ones({1, 3})).sum().backward();
  lin->to(kFloat64);
  CHECK(w.dtype() == DType::f64);
  CHECK(lin->parameters()[0].is_same(w));
  CHECK(w.grad().dtype() == DType::f64);
  CHECK(rel_err(w, w32) == 0.0);
  CHECK(lin->forward(ones({1, 3}, DType::f64)).dtype() == DType::f64);
  CHECK(w.requires_grad());
}
