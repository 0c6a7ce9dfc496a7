// The basic layers: Linear, Embedding, LayerNorm, Dropout, activations, Sequential, MLP.
// Parameter layouts and default inits follow PyTorch:
//   Linear     weight [out, in], bias [out]; both uniform(-1/sqrt(in), 1/sqrt(in))
//   Embedding  weight [num, dim] ~ normal(0, 1)
//   LayerNorm  weight [dim] = 1, bias [dim] = 0
// Every random init takes a Generator* (the thread's default generator when null).
// Dropout owns its Generator, seeded at construction, so reruns and every rank draw the
// same masks; it is active only in training mode.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/module.h"

namespace rg::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [..., in] -> [..., out]
  // Makes `weight` this layer's weight parameter (weight tying; shapes must match).
  void tie_weight(const Tensor& weight);
  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when built without
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator* gen = nullptr);
  Tensor forward(const Tensor& indices) override;  // int [...] -> [..., dim]
  int64_t num_embeddings, embedding_dim;
  Tensor weight;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool bias = true);
  Tensor forward(const Tensor& x) override;  // over the last dim
  int64_t dim;
  double eps;
  Tensor weight, bias;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, uint64_t seed = 0);
  Tensor forward(const Tensor& x) override;
  double p;
  Generator& generator() { return gen_; }

 private:
  Generator gen_;
};

class GELU : public Module {  // exact, as torch.nn.GELU() (rg::gelu(x, "tanh") for GPT-2's)
 public:
  GELU() : Module("GELU") {}
  Tensor forward(const Tensor& x) override { return gelu(x); }
};
class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override { return relu(x); }
};
class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override { return tanh(x); }
};

// Children named "0", "1", ...; forward feeds each output to the next.
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return named_children().size(); }

 protected:
  explicit Sequential(const char* type_name) : Module(type_name) {}
};

enum class Activation { gelu, relu, tanh };
std::shared_ptr<Module> make_activation(Activation activation);

// widths {in, h1, ..., out}: Linear layers between consecutive widths, the activation
// between them (none after the last). A Sequential, so names are "0.weight", "2.weight", ...
class MLP : public Sequential {
 public:
  explicit MLP(const std::vector<int64_t>& widths, Activation activation = Activation::gelu,
               bool bias = true, Generator* gen = nullptr);
};

}  // namespace rg::nn
