// Optimizers, clipping and the LR schedule against hand-computed values.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "nn_test_util.h"

using namespace rg;
using namespace rg::optim;

namespace {
Tensor param(std::vector<double> v) { return tensor(v, {}, DType::f64).requires_grad_(); }
void set_grad(Tensor& p, std::vector<double> g) { p.set_grad(tensor(g, {}, DType::f64)); }
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("SGD with momentum, dampening and weight decay matches PyTorch's formulas") {
  SGDOptions o{
      .lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = false, .weight_decay = 0.01};
  Tensor p = param({1.0, -2.0});
  SGD opt({p}, o);
  double p0 = 1.0, buf = 0;
  for (double g : {0.5, -0.25}) {
    set_grad(p, {g, g});
    opt.step();
    double d = g + 0.01 * p0;
    buf = buf == 0 ? d : 0.9 * buf + 0.9 * d;  // first step: buf = d (no dampening)
    p0 -= 0.1 * buf;
    CHECK(values(p)[0] == doctest::Approx(p0).epsilon(1e-14));
  }
  CHECK(opt.momentum_buffer(0).defined());
}

TEST_CASE("SGD nesterov and plain steps") {
  Tensor p = param({1.0}), q = param({1.0});
  SGD nesterov({p}, {.lr = 0.5, .momentum = 0.5, .dampening = 0, .nesterov = true});
  SGD plain({q}, {.lr = 0.5});
  set_grad(p, {2.0});
  set_grad(q, {2.0});
  nesterov.step();  // buf = 2, g = 2 + 0.5 * 2 = 3
  plain.step();
  CHECK(values(p)[0] == doctest::Approx(1.0 - 0.5 * 3.0));
  CHECK(values(q)[0] == doctest::Approx(0.0));
  CHECK_THROWS_AS(SGD({p}, {.lr = 0.1, .momentum = 0, .nesterov = true}), Error);
}

TEST_CASE("AdamW two steps match the decoupled, bias-corrected formula; no grad is skipped") {
  AdamWOptions o{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  Tensor p = param({0.5, -1.5}), frozen = param({3.0});
  AdamW opt({p, frozen}, o);
  double x = 0.5, m = 0, v = 0;
  int t = 0;
  for (double g : {0.3, -0.7}) {
    set_grad(p, {g, g});
    opt.step();
    ++t;
    x *= 1 - 0.01 * 0.1;
    m = 0.8 * m + 0.2 * g;
    v = 0.95 * v + 0.05 * g * g;
    double mhat = m / (1 - std::pow(0.8, t)), vhat = v / (1 - std::pow(0.95, t));
    x -= 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
    CHECK(values(p)[0] == doctest::Approx(x).epsilon(1e-12));
  }
  CHECK(opt.state(0).step == 2);
  CHECK(opt.state(1).step == 0);
  CHECK(values(frozen)[0] == 3.0);
  CHECK(values(opt.state(0).exp_avg)[0] == doctest::Approx(m).epsilon(1e-12));
}

TEST_CASE("AdamW state_dict round trip continues identically") {
  Tensor a = param({1.0, 2.0}), b = param({1.0, 2.0});
  AdamW first({a}, {.lr = 0.1}), second({b}, {.lr = 0.1});
  set_grad(a, {0.1, -0.2});
  first.step();
  nn::StateDict sd = first.state_dict();
  CHECK(sd.keys() ==
        std::vector<std::string>{"state.0.step", "state.0.exp_avg", "state.0.exp_avg_sq"});
  {
    NoGradGuard g;
    b.detach().copy_(a);
  }
  second.load_state_dict(sd);
  CHECK(second.state(0).step == 1);
  set_grad(a, {0.3, 0.3});
  set_grad(b, {0.3, 0.3});
  first.step();
  second.step();
  CHECK(equal(a, b));
}

TEST_CASE("zero_grad on the optimizer clears gradients") {
  Tensor p = param({1.0});
  SGD opt({p});
  set_grad(p, {1.0});
  opt.zero_grad(false);
  CHECK(values(p.grad())[0] == 0.0);
  opt.zero_grad();
  CHECK_FALSE(p.grad().defined());
  opt.step();  // nothing to do
  CHECK(values(p)[0] == 1.0);
}

TEST_CASE("clip_grad_norm_ returns the global norm and scales to max_norm") {
  Tensor a = param({3.0, 4.0}), b = param({12.0}), none = param({1.0});
  set_grad(a, {3.0, 4.0});
  set_grad(b, {12.0});
  double norm = clip_grad_norm_({a, b, none}, 6.5);
  CHECK(norm == doctest::Approx(13.0).epsilon(1e-15));
  double scale = 6.5 / (13.0 + 1e-6);
  CHECK(values(a.grad())[1] == doctest::Approx(4.0 * scale).epsilon(1e-15));
  CHECK(values(b.grad())[0] == doctest::Approx(12.0 * scale).epsilon(1e-15));
  CHECK(grad_norm({a, b}) == doctest::Approx(6.5).epsilon(1e-6));
  // Below max_norm: untouched.
  CHECK(clip_grad_norm_({a, b}, 100.0) == doctest::Approx(6.5).epsilon(1e-6));
  CHECK(values(b.grad())[0] == doctest::Approx(12.0 * scale).epsilon(1e-15));
}

TEST_CASE("warmup + cosine schedule values") {
  WarmupCosineSchedule s{.max_lr = 1.0, .min_lr = 0.1, .warmup_steps = 10, .decay_steps = 110};
  CHECK(s(0) == doctest::Approx(1.0 / 11));
  CHECK(s(9) == doctest::Approx(10.0 / 11));
  CHECK(s(10) == doctest::Approx(1.0));
  CHECK(s(60) == doctest::Approx(0.55));
  CHECK(s(35) == doctest::Approx(0.1 + 0.45 * (1 + std::cos(M_PI / 4))));
  CHECK(s(110) == doctest::Approx(0.1));
  CHECK(s(1000) == doctest::Approx(0.1));
}

namespace {
std::set<std::string> names_in(const rg::nn::Module& m, const rg::optim::ParamGroup& g) {
  std::set<std::string> out;
  for (const Tensor& p : g.params)
    for (const auto& [name, q] : m.named_parameters())
      if (q.impl() == p.impl()) out.insert(name);
  return out;
}
}  // namespace

TEST_CASE("decay_groups: nanoGPT's split by default, embeddings and the rest switchable") {
  rg::nn::GPTConfig c;
  c.vocab_size = 7;
  c.block_size = 4;
  c.n_layer = 1;
  c.n_head = 1;
  c.n_embd = 4;
  auto gpt = std::make_shared<rg::nn::GPT>(c);
  using rg::optim::parse_no_decay;
  auto g = rg::optim::decay_groups(*gpt, parse_no_decay("biases,norms"));
  REQUIRE(g.size() == 2);
  CHECK(!g[0].weight_decay.has_value());
  CHECK(g[1].weight_decay == 0.0);
  // nanoGPT: every tensor of >= 2 dimensions decays (embeddings too), no 1-D tensor does.
  for (const Tensor& p : g[0].params) CHECK(p.dim() >= 2);
  for (const Tensor& p : g[1].params) CHECK(p.dim() == 1);
  CHECK(g[0].params.size() + g[1].params.size() == gpt->parameters().size());
  CHECK(names_in(*gpt, g[0]).count("transformer.wte.weight") == 1);
  CHECK(names_in(*gpt, g[1]).count("transformer.h.0.ln_1.weight") == 1);

  auto e = rg::optim::decay_groups(*gpt, parse_no_decay("embeddings,biases,norms"));
  CHECK(names_in(*gpt, e[1]) ==
        std::set<std::string>{
            "transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
            "transformer.h.0.ln_1.bias", "transformer.h.0.attn.c_attn.bias",
            "transformer.h.0.attn.c_proj.bias", "transformer.h.0.ln_2.weight",
            "transformer.h.0.ln_2.bias", "transformer.h.0.mlp.c_fc.bias",
            "transformer.h.0.mlp.c_proj.bias", "transformer.ln_f.weight", "transformer.ln_f.bias"});
  auto n = rg::optim::decay_groups(*gpt, parse_no_decay("norms"));  // biases of Linear decay
  CHECK(names_in(*gpt, n[0]).count("transformer.h.0.attn.c_attn.bias") == 1);
  CHECK(names_in(*gpt, n[1]).count("transformer.ln_f.bias") == 1);
  auto all = rg::optim::decay_groups(*gpt, parse_no_decay("none"));  // PyTorch: decay all
  CHECK(all[1].params.empty());
  CHECK(all[0].params.size() == gpt->parameters().size());

  CHECK(rg::optim::to_string(parse_no_decay("norms,biases")) == "biases,norms");
  CHECK(rg::optim::to_string(parse_no_decay("none")) == "none");
  CHECK_THROWS_WITH_AS(parse_no_decay("biases,weights"),
                       doctest::Contains("unknown kind 'weights'"), rg::Error);
}
