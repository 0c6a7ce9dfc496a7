#include <doctest/doctest.h>

#include <cmath>

#include "ringgrad.h"

using namespace rg;

TEST_CASE("leaf .grad accumulates across backward calls") {
  Tensor w = tensor(std::vector<float>{1, 2, 3}).requires_grad_();
  (w * w).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 4, 6});
  (w * 3.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{5, 7, 9});
  w.set_grad(Tensor());
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("a tensor used twice gets the sum of both paths") {
  Tensor x = tensor(std::vector<float>{2}).requires_grad_();
  Tensor y = x * x + x * 3.0;  // dy/dx = 2x + 3 = 7
  y.sum().backward();
  CHECK(x.grad().item() == doctest::Approx(7));
}

TEST_CASE("backward on a non-scalar needs a gradient of its shape") {
  Tensor x = ones({2, 2}).requires_grad_();
  Tensor y = x * 2.0;
  CHECK_THROWS_WITH_AS(
      y.backward(), doctest::Contains("backward: grad can be implicitly created only for scalar"),
      Error);
  CHECK_THROWS_WITH_AS(y.backward(ones({3})),
                       doctest::Contains("backward: gradient of shape [3] does not match"), Error);
  y.backward(full({2, 2}, 0.5));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{1, 1, 1, 1});
}

TEST_CASE("backward through a freed graph is a clear error; retain_graph keeps it") {
  Tensor x = ones({3}).requires_grad_();
  Tensor loss = (x.exp() * 2.0).sum();
  loss.backward(Tensor(), /*retain_graph=*/true);
  loss.backward();
  CHECK(x.grad().to_vector<float>()[0] == doctest::Approx(4 * std::exp(1.0)));
  CHECK_THROWS_WITH_AS(loss.backward(),
                       doctest::Contains("backward through the graph a second time"), Error);
}

TEST_CASE("modifying a saved tensor in place makes backward throw naming the op") {
  Tensor x = ones({3}).requires_grad_();
  Tensor y = x * 2.0;
  Tensor z = y.exp();  // saves its output
  {
    NoGradGuard g;
    z.detach().add_(ones({3}));
  }
  CHECK_THROWS_WITH_AS(z.sum().backward(),
                       doctest::Contains("exp: a tensor saved for backward was modified in place"),
                       Error);
}

TEST_CASE("requires_grad propagates; detach and NoGradGuard cut the graph") {
  Tensor a = ones({2}).requires_grad_();
  Tensor b = ones({2});
  CHECK((a + b).requires_grad());
  CHECK_FALSE((a + b).is_leaf());
  CHECK_FALSE((a.detach() + b).requires_grad());
  {
    NoGradGuard g;
    CHECK_FALSE((a + b).requires_grad());
  }
  CHECK_THROWS_WITH_AS(b.sum().backward(), doctest::Contains("does not require grad"), Error);
  CHECK_THROWS_WITH_AS(a.add_(b),
                       doctest::Contains("add_: in-place operation on a tensor that requires grad"),
                       Error);
}

TEST_CASE("hooks: tensor hooks can rewrite gradients; post-accumulate hooks fire in ready order") {
  Tensor w1 = ones({2}).requires_grad_();
  Tensor w2 = ones({2}).requires_grad_();
  Tensor w3 = ones({2}).requires_grad_();
  std::vector<int> order;
  register_post_accumulate_grad_hook(w1, [&](const Tensor&) { order.push_back(1); });
  register_post_accumulate_grad_hook(w2, [&](const Tensor&) { order.push_back(2); });
  register_post_accumulate_grad_hook(w3, [&](const Tensor& p) {
    order.push_back(3);
    CHECK(p.grad().defined());
  });
  register_hook(w2, [](const Tensor& g) { return g * 10.0; });
  bool finished = false;
  int finished_after = -1;
  register_post_accumulate_grad_hook(w1, [&](const Tensor&) {
    queue_callback([&] {
      finished = true;
      finished_after = static_cast<int>(order.size());
    });
  });
  // Forward order w1 -> w2 -> w3, so backward readies w3 first.
  Tensor h = (ones({2}) * w1).exp();
  h = rg::tanh(h * w2);
  h = h * w3;
  h.sum().backward();
  CHECK(order == std::vector<int>{3, 2, 1});
  CHECK(finished);
  CHECK(finished_after == 3);
  Tensor expected_w2 = w2.grad() / 10.0;
  CHECK(expected_w2.to_vector<float>()[0] != 0);
}

TEST_CASE("retain_grad keeps the gradient of a non-leaf") {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 3.0;
  y.retain_grad();
  (y * y).sum().backward();
  CHECK(y.grad().to_vector<float>() == std::vector<float>{6, 6});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{18, 18});
}

TEST_CASE("parameters the loss does not reach get no gradient and no hook") {
  Tensor used = ones({2}).requires_grad_();
  Tensor unused = ones({2}).requires_grad_();
  bool fired = false;
  register_post_accumulate_grad_hook(unused, [&](const Tensor&) { fired = true; });
  Tensor dead = unused * 2.0;  // built but not part of the loss
  (used * 2.0).sum().backward();
  CHECK_FALSE(fired);
  CHECK_FALSE(unused.grad().defined());
}

// A backward started from inside another (a checkpoint's recomputation does this) queues its
// callbacks on the outermost one: DDP's end-of-backward callback must run once, at the end.
TEST_CASE("a callback queued in a nested backward runs when the outermost backward ends") {
  Tensor inner_w = ones({2}).requires_grad_();
  Tensor outer_w = ones({2}).requires_grad_();
  std::vector<std::string> events;
  register_post_accumulate_grad_hook(inner_w, [&](const Tensor&) {
    events.push_back("inner hook");
    queue_callback([&] { events.push_back("callback"); });
  });
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 3.0;
  register_hook(y, [&](const Tensor& g) {
    events.push_back("nested backward");
    GradMode::set_enabled(true);  // backward runs without recording; the nested graph needs it
    Tensor inner = (inner_w * 2.0).sum();
    GradMode::set_enabled(false);
    inner.backward();  // a backward inside this one
    events.push_back("nested done");
    return g;
  });
  register_post_accumulate_grad_hook(x, [&](const Tensor&) { events.push_back("outer last"); });
  (y * outer_w).sum().backward();
  CHECK(events == std::vector<std::string>{"nested backward", "inner hook", "nested done",
                                           "outer last", "callback"});
  CHECK(inner_w.grad().to_vector<float>() == std::vector<float>{2, 2});
}
