// Initialisers: draw in the tensor's dtype on its device, then copy into place.
#include "nn/init.h"

#include "autograd/grad_mode.h"

namespace rg::nn::init {

void normal_(const Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard no_grad;
  Tensor draw = randn(t.shape(), t.dtype(), t.device(), gen);
  t.detach().copy_(add(mul(draw, std), mean));
}

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  NoGradGuard no_grad;
  Tensor draw = rand(t.shape(), t.dtype(), t.device(), gen);
  t.detach().copy_(add(mul(draw, high - low), low));
}

void constant_(const Tensor& t, double value) {
  NoGradGuard no_grad;
  t.detach().fill_(value);
}

}  // namespace rg::nn::init
