// Exactness of the CPU kernels, whichever instruction set they dispatch to: nn::GPT's loss
// and every parameter's gradient agree with the plain f64 reference (gpt_reference.h) to
// 1e-12 relative in f64 and 1e-5 in f32. The relative error of a tensor is
// max|ringgrad - reference| / max(max|reference|, DBL_MIN), over the whole tensor; of the
// loss, |ringgrad - reference| / |reference|.
// Two shapes: small ones with tails everywhere (T = 11, C = 48, odd vocab) and one with
// C, T >= 64, so the vectorised kernels run full 16- and 64-wide panels and their tails.
// The model's init is perturbed (biases and LayerNorm parameters away from 0 and 1) so every
// parameter takes part in the forward; dropout is 0.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "gpt_reference.h"
#include "nn/nn.h"
#include "ringgrad.h"

using namespace rg;
using namespace rg::exactness;

namespace {

struct Case {
  nn::GPTConfig gpt;
  int64_t batch, seq;
};

Case tails_case() {  // nothing a multiple of 8 but the heads' count
  nn::GPTConfig g;
  g.vocab_size = 67;
  g.block_size = 16;
  g.n_layer = 2;
  g.n_head = 4;
  g.n_embd = 48;
  g.seed = 5;
  return {g, 3, 11};
}

Case panels_case() {  // C = 72 = 64 + 8, 4C = 288, T = 70 = 64 + 6, head size 18
  nn::GPTConfig g;
  g.vocab_size = 131;
  g.block_size = 80;
  g.n_layer = 2;
  g.n_head = 4;
  g.n_embd = 72;
  g.seed = 7;
  return {g, 2, 70};
}

RefConfig ref_config(const Case& k) {
  return {.vocab = k.gpt.vocab_size,
          .block = k.gpt.block_size,
          .layers = k.gpt.n_layer,
          .heads = k.gpt.n_head,
          .embd = k.gpt.n_embd,
          .batch = k.batch,
          .seq = k.seq};
}

// The GPT of the case in `dtype`, its biases ~ normal(0, 0.02) and LayerNorm weights
// ~ normal(1, 0.1) instead of 0 and 1; the same values (f32 ones) for every dtype.
std::shared_ptr<nn::GPT> make_model(const Case& k, DType dtype) {
  auto model = std::make_shared<nn::GPT>(k.gpt);
  model->to(kFloat32);
  Generator gen{k.gpt.seed + 100, 0};
  for (const auto& [name, p] : model->named_parameters()) {
    const bool layer_norm = name.find(".ln_") != std::string::npos;
    if (name.ends_with(".bias")) nn::init::normal_(p, 0.0, 0.02, &gen);
    if (layer_norm && name.ends_with(".weight")) nn::init::normal_(p, 1.0, 0.1, &gen);
  }
  model->to(dtype);
  return model;
}

std::vector<int64_t> tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out(n);
  for (int64_t& t : out) t = static_cast<int64_t>(rng() % static_cast<uint32_t>(vocab));
  return out;
}

// The reference's parameters, copied from the model's by name.
RefParams ref_params(const RefConfig& c, nn::GPT& model) {
  RefParams p = zero_params(c);
  auto ref = named(p);
  auto params = model.named_parameters();
  REQUIRE(params.size() == ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    REQUIRE(params[i].first == ref[i].first);
    *ref[i].second = params[i].second.to(kFloat64).to_vector<double>();
    REQUIRE(ref[i].second->size() == static_cast<size_t>(params[i].second.numel()));
  }
  return p;
}

double rel_err(const Vec& got, const Vec& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return diff / std::max(scale, std::numeric_limits<double>::min());
}

// Runs the case's GPT in `dtype` (forward, backward) and compares the loss and every
// gradient with the reference's to `tol`; returns the largest relative error.
double check_against_reference(const Case& k, DType dtype, double tol) {
  const RefConfig c = ref_config(k);
  const int64_t n = k.batch * k.seq;
  const std::vector<int64_t> idx = tokens(n, c.vocab, 21), targets = tokens(n, c.vocab, 22);
  auto model = make_model(k, dtype);
  RefParams p = ref_params(c, *model);
  const RefForward f = reference_forward(c, p, idx, targets);
  RefParams want = reference_backward(c, p, f, idx, targets);

  Tensor loss =
      model->forward(tensor(idx, {k.batch, k.seq}), tensor(targets, {k.batch, k.seq})).second;
  loss.backward();
  double worst = std::abs(loss.item() - f.loss) / std::abs(f.loss);
  std::string worst_name = "loss";
  CHECK_MESSAGE(worst <= tol, "loss: relative error " << worst << " > " << tol);
  auto want_named = named(want);
  auto params = model->named_parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = want_named[i].first;
    const Tensor grad = params[i].second.grad();
    REQUIRE_MESSAGE(grad.defined(), name << ": no gradient");
    const double err = rel_err(grad.to(kFloat64).to_vector<double>(), *want_named[i].second);
    CHECK_MESSAGE(err <= tol, name << ".grad: relative error " << err << " > " << tol);
    if (err > worst) {
      worst = err;
      worst_name = name + ".grad";
    }
  }
  MESSAGE(std::string(dtype_name(dtype))
          << " B=" << k.batch << " T=" << k.seq << " C=" << c.embd << " V=" << c.vocab
          << ": largest relative error " << worst << " (" << worst_name << ")");
  return worst;
}

}  // namespace

TEST_CASE("f64 GPT loss and every gradient equal the plain reference to 1e-12, with tails") {
  CHECK(check_against_reference(tails_case(), kFloat64, 1e-12) <= 1e-12);
}

TEST_CASE("f64 GPT loss and every gradient equal the plain reference to 1e-12, C and T >= 64") {
  CHECK(check_against_reference(panels_case(), kFloat64, 1e-12) <= 1e-12);
}

TEST_CASE("f32 GPT loss and every gradient equal the f64 reference to 1e-5, with tails") {
  CHECK(check_against_reference(tails_case(), kFloat32, 1e-5) <= 1e-5);
}

TEST_CASE("f32 GPT loss and every gradient equal the f64 reference to 1e-5, C and T >= 64") {
  CHECK(check_against_reference(panels_case(), kFloat32, 1e-5) <= 1e-5);
}
