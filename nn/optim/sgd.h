// SGD with PyTorch's semantics (torch.optim.SGD, single-tensor path):
//   g = grad + weight_decay * p
//   momentum: buf = g (first step) | momentum * buf + (1 - dampening) * g
//             g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
#pragma once
#include "nn/optim/optimizer.h"

namespace rg::optim {

struct SGDOptions {
  double lr = 1e-2;
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options = {});
  SGD(std::vector<ParamGroup> groups, SGDOptions options = {});
  void step() override;
  using Optimizer::step;  // step(grad_scale): the gradients scaled in place, then step()
  // The momentum buffer of parameter `index` (undefined before its first step).
  const Tensor& momentum_buffer(size_t index) const { return buffers_.at(index); }
  nn::StateDict state_dict() const override;  // "state.{i}.momentum_buffer"
  void load_state_dict(const nn::StateDict& dict) override;
  SGDOptions options;

 private:
  std::vector<Tensor> buffers_;
};

}  // namespace rg::optim
