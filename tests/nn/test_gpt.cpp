// GPT: nanoGPT's parameter names and shapes, weight tying, init, causality.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cuda/device_errors.h"
#include "nn_test_util.h"

using namespace rg;
using namespace rg::nn;

namespace {
GPTConfig tiny_config() { return rg::nn_test::small_gpt_config(11, 5); }
}  // namespace

TEST_CASE("GPT parameter names and shapes follow nanoGPT") {
  auto model = std::make_shared<GPT>(tiny_config());
  const int64_t V = 11, B = 8, C = 16;
  std::vector<std::pair<std::string, Shape>> expected = {{"transformer.wte.weight", {V, C}},
                                                         {"transformer.wpe.weight", {B, C}}};
  for (int i = 0; i < 2; ++i) {
    std::string h = "transformer.h." + std::to_string(i) + ".";
    std::vector<std::pair<std::string, Shape>> block = {{h + "ln_1.weight", {C}},
                                                        {h + "ln_1.bias", {C}},
                                                        {h + "attn.c_attn.weight", {3 * C, C}},
                                                        {h + "attn.c_attn.bias", {3 * C}},
                                                        {h + "attn.c_proj.weight", {C, C}},
                                                        {h + "attn.c_proj.bias", {C}},
                                                        {h + "ln_2.weight", {C}},
                                                        {h + "ln_2.bias", {C}},
                                                        {h + "mlp.c_fc.weight", {4 * C, C}},
                                                        {h + "mlp.c_fc.bias", {4 * C}},
                                                        {h + "mlp.c_proj.weight", {C, 4 * C}},
                                                        {h + "mlp.c_proj.bias", {C}}};
    expected.insert(expected.end(), block.begin(), block.end());
  }
  expected.push_back({"transformer.ln_f.weight", {C}});
  expected.push_back({"transformer.ln_f.bias", {C}});

  auto named = model->named_parameters();
  REQUIRE(named.size() == expected.size());
  for (size_t i = 0; i < named.size(); ++i) {
    CHECK(named[i].first == expected[i].first);
    CHECK(named[i].second.shape() == expected[i].second);
  }
  // state_dict also lists the tied lm_head.weight, last, as nanoGPT's does.
  auto keys = model->state_dict().keys();
  REQUIRE(keys.size() == expected.size() + 1);
  CHECK(keys.back() == "lm_head.weight");
}

TEST_CASE("lm_head.weight is transformer.wte.weight, counted once") {
  auto model = std::make_shared<GPT>(tiny_config());
  CHECK(model->lm_head->weight.is_same(model->wte->weight));
  auto sd = model->state_dict();
  CHECK(sd.at("lm_head.weight").is_same(sd.at("transformer.wte.weight")));
  int64_t n = 0;
  for (auto& p : model->parameters()) n += p.numel();
  CHECK(n == model->num_parameters());
  model->to(kFloat64);  // tying survives conversion
  CHECK(model->lm_head->weight.is_same(model->wte->weight));
  CHECK(model->lm_head->weight.dtype() == DType::f64);
}

TEST_CASE("GPT init follows nanoGPT and depends only on the seed") {
  GPTConfig c = tiny_config();
  c.n_embd = 32;
  c.n_layer = 4;
  auto a = std::make_shared<GPT>(c), b = std::make_shared<GPT>(c);
  for (size_t i = 0; i < a->parameters().size(); ++i)
    CHECK(equal(a->parameters()[i], b->parameters()[i]));
  auto std_of = [](const Tensor& t) { return std::sqrt(mean(square(t)).item()); };
  CHECK(std_of(a->h[0]->mlp->c_fc->weight) == doctest::Approx(0.02).epsilon(0.1));
  CHECK(std_of(a->h[1]->mlp->c_proj->weight) ==
        doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.1));
  CHECK(std_of(a->h[0]->attn->c_proj->weight) ==
        doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.15));
  CHECK(amax(abs(a->h[0]->attn->c_attn->bias)).item() == 0.0);
  CHECK(amin(a->h[0]->ln_1->weight).item() == 1.0);
  c.seed = 6;
  auto d = std::make_shared<GPT>(c);
  CHECK_FALSE(equal(a->wte->weight, d->wte->weight));
}

TEST_CASE("GPT is causal: a later token does not change earlier logits") {
  auto model = std::make_shared<GPT>(tiny_config());
  Tensor idx = rg::nn_test::random_tokens({2, 6}, 11, 1);
  std::vector<int64_t> v = idx.to_vector<int64_t>();
  v[5] = (v[5] + 1) % 11;
  v[11] = (v[11] + 3) % 11;
  Tensor logits = model->forward(idx), changed = model->forward(tensor(v, {2, 6}));
  CHECK(logits.shape() == Shape{2, 6, 11});
  CHECK(equal(logits.narrow(1, 0, 5), changed.narrow(1, 0, 5)));
  CHECK_FALSE(equal(logits.narrow(1, 5, 1), changed.narrow(1, 5, 1)));
  CHECK_THROWS_WITH_AS(model->forward(zeros({1, 9}, DType::i64)),
                       doctest::Contains("GPT: sequence length 9 exceeds block_size 8"), Error);
}

TEST_CASE("GPT dropout acts in train mode only") {
  GPTConfig c = tiny_config();
  c.dropout = 0.2;
  auto model = std::make_shared<GPT>(c);
  Tensor idx = rg::nn_test::random_tokens({2, 5}, 11, 2);
  CHECK_FALSE(equal(model->forward(idx), model->forward(idx)));
  model->eval();
  CHECK(equal(model->forward(idx), model->forward(idx)));
  auto [logits, loss] = model->forward(idx, rg::nn_test::random_tokens({2, 5}, 11, 3));
  CHECK(loss.numel() == 1);
  CHECK(loss.item() == doctest::Approx(std::log(11.0)).epsilon(0.1));
}

TEST_CASE("GPTConfig.gelu_approximate picks the MLP's GELU: exact by default, as nanoGPT") {
  GPTConfig c = tiny_config();
  CHECK(c.gelu_approximate == "none");
  Generator gen{3, 0};
  Tensor x = randn({2, 3, c.n_embd}, kFloat64, kCPU, &gen);
  for (const char* approximate : {"none", "tanh"}) {
    c.gelu_approximate = approximate;
    auto model = std::make_shared<GPT>(c);
    model->to(kFloat64);
    const auto& mlp = model->h[0]->mlp;
    Tensor expected = mlp->c_proj->forward(gelu(mlp->c_fc->forward(x), approximate));
    CHECK(equal(mlp->forward(x), expected));
  }
  c.gelu_approximate = "erf";
  CHECK_THROWS_WITH_AS(
      std::make_shared<GPT>(c),
      doctest::Contains("GPTConfig.gelu_approximate must be \"none\" or \"tanh\", got \"erf\""),
      Error);
}

TEST_CASE("a tied weight loads from a file that stores it once, or twice with equal values") {
  auto source = std::make_shared<GPT>(tiny_config());
  GPTConfig other = tiny_config();
  other.seed = 99;
  StateDict once;  // safetensors' save_model keeps one name of a tied tensor
  for (const auto& [name, t] : source->state_dict())
    if (name != "lm_head.weight") once.insert(name, t);
  auto a = std::make_shared<GPT>(other);
  a->load_state_dict(once);  // strict
  CHECK(equal(a->lm_head->weight, source->wte->weight));
  CHECK(a->lm_head->weight.impl() == a->wte->weight.impl());

  StateDict only_head;  // ... or the other name
  for (const auto& [name, t] : source->state_dict())
    if (name != "transformer.wte.weight") only_head.insert(name, t);
  auto b = std::make_shared<GPT>(other);
  b->load_state_dict(only_head);
  CHECK(equal(b->wte->weight, source->wte->weight));

  auto c = std::make_shared<GPT>(other);
  c->load_state_dict(source->state_dict());  // both names, equal values
  CHECK(equal(c->wte->weight, source->wte->weight));
}

TEST_CASE("tied names with different values in one file are an error naming both keys") {
  auto source = std::make_shared<GPT>(tiny_config());
  StateDict both;
  for (const auto& [name, t] : source->state_dict()) both.insert(name, t.clone());
  both.insert("lm_head.weight", add(both.at("lm_head.weight"), scalar_tensor(1.0)));
  auto model = std::make_shared<GPT>(tiny_config());
  try {
    model->load_state_dict(both);
    FAIL("differing tied copies loaded");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK(msg.find("transformer.wte.weight and lm_head.weight") != std::string::npos);
    CHECK(msg.find("differ") != std::string::npos);
  }
  both.erase("lm_head.weight");
  both.erase("transformer.wte.weight");
  CHECK_THROWS_WITH_AS(model->load_state_dict(both),
                       doctest::Contains("missing keys: transformer.wte.weight, lm_head.weight"),
                       Error);
}

// A training step on a gpu device stalls the host only where the loop asks: after the
// first step (which copies the position ids to the device once), forward, backward and
// AdamW make no synchronization; reading the loss makes one, where the step's index checks
// are reported (kernels/cuda/device_errors.h).
TEST_CASE("a GPT training step on sim synchronizes with the host once, reading the loss") {
  const Device sim("sim");
  auto model = std::make_shared<GPT>(tiny_config());
  model->to(sim);
  optim::AdamW opt(model->parameters(), {.lr = 1e-3});
  Tensor x = tensor(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5}).to(sim);
  Tensor y = tensor(std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8, 9, 10, 0}, {2, 5}).to(sim);
  for (int step = 0; step < 3; ++step) {
    const uint64_t before = gpu::host_syncs(sim);
    opt.zero_grad();
    Tensor loss = model->forward(x, y).second;
    loss.backward();
    opt.step();
    if (step > 0) CHECK(gpu::host_syncs(sim) == before);
    CHECK(std::isfinite(loss.item()));
    if (step > 0) CHECK(gpu::host_syncs(sim) == before + 1);
  }
  Tensor bad = tensor(std::vector<int64_t>{1, 2, 3, 4, 11, 6, 7, 8, 9, 10}, {2, 5}).to(sim);
  Tensor loss = model->forward(bad, y).second;  // no error yet: nothing waited
  CHECK_THROWS_WITH_AS(loss.item(), "embedding: index 11 out of range for vocab size 11",
                       rg::Error);
}
