// The basic layers (see nn/layers.h for layouts and inits).
#include "nn/layers.h"

#include <cmath>
#include <string>

#include "nn/init.h"

namespace rg::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator* gen)
    : Module("Linear"), in_features(in), out_features(out) {
  RG_CHECK(in > 0 && out > 0, "Linear: features must be positive, got in=", in, " out=", out);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight = register_parameter("weight", empty({out, in}));
  init::uniform_(weight, -bound, bound, gen);
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    init::uniform_(bias, -bound, bound, gen);
  }
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

void Linear::tie_weight(const Tensor& w) {
  RG_CHECK(w.shape() == weight.shape(), "Linear.tie_weight: weight of shape ", shape_str(w.shape()),
           " does not match [out, in] = ", shape_str(weight.shape()));
  weight = register_parameter("weight", w);
}

Embedding::Embedding(int64_t num, int64_t dim, Generator* gen)
    : Module("Embedding"), num_embeddings(num), embedding_dim(dim) {
  RG_CHECK(num > 0 && dim > 0, "Embedding: sizes must be positive, got ", num, " x ", dim);
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight, 0.0, 1.0, gen);
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices); }

LayerNorm::LayerNorm(int64_t d, double e, bool with_bias) : Module("LayerNorm"), dim(d), eps(e) {
  RG_CHECK(d > 0, "LayerNorm: dim must be positive, got ", d);
  weight = register_parameter("weight", ones({d}));
  if (with_bias) bias = register_parameter("bias", zeros({d}));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, {dim}, weight, bias, eps); }

Dropout::Dropout(double prob, uint64_t seed) : Module("Dropout"), p(prob), gen_{seed, 0} {
  RG_CHECK(p >= 0 && p <= 1, "Dropout: probability must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training(), &gen_); }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) : Module("Sequential") {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(named_children().size()), std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (const auto& [name, module] : named_children()) h = module->forward(h);
  return h;
}

std::shared_ptr<Module> make_activation(Activation activation) {
  switch (activation) {
    case Activation::gelu:
      return std::make_shared<GELU>();
    case Activation::relu:
      return std::make_shared<ReLU>();
    case Activation::tanh:
      return std::make_shared<Tanh>();
  }
  RG_FAIL("make_activation: unknown activation");
}

MLP::MLP(const std::vector<int64_t>& widths, Activation activation, bool bias, Generator* gen)
    : Sequential("MLP") {
  RG_CHECK(widths.size() >= 2, "MLP: need at least {in, out} widths, got ", widths.size());
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    if (i > 0) push_back(make_activation(activation));
    push_back(std::make_shared<Linear>(widths[i], widths[i + 1], bias, gen));
  }
}

}  // namespace rg::nn
