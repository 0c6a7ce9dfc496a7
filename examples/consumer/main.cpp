// A research prototype that uses an installed ringgrad through pkg-config:
//   c++ -std=c++20 main.cpp $(pkg-config --cflags --libs ringgrad)
// Fits y = 3x + 1 with autograd and plain gradient descent, prints the result, and checks
// that the sim device (the CUDA kernels run on the CPU) computes the same product.
#include <ringgrad.h>

#include <cmath>
#include <cstdio>

int main() {
  rg::manual_seed(0);
  rg::Tensor x = rg::randn({64, 1});
  rg::Tensor y = x * 3.0 + 1.0;
  rg::Tensor w = rg::zeros({1, 1}).requires_grad_();
  rg::Tensor b = rg::zeros({1}).requires_grad_();
  for (int step = 0; step < 200; ++step) {
    rg::Tensor loss = rg::mse_loss(rg::linear(x, w, b), y);
    w.set_grad(rg::Tensor());
    b.set_grad(rg::Tensor());
    loss.backward();
    rg::NoGradGuard no_grad;
    w.sub_(w.grad() * 0.1);
    b.sub_(b.grad() * 0.1);
  }
  double wv = w.item(), bv = b.item();
  std::printf("w=%.4f b=%.4f\n", wv, bv);

  rg::Device sim = rg::Device::parse("sim");
  rg::Tensor a = rg::randn({8, 16}), m = rg::randn({16, 4});
  double sim_diff =
      rg::max_abs_diff(rg::matmul(a.to(sim), m.to(sim)).to(rg::kCPU), rg::matmul(a, m));
  std::printf("sim matmul vs cpu: max |diff| = %.3g\n", sim_diff);
  return (std::abs(wv - 3) < 1e-3 && std::abs(bv - 1) < 1e-3 && sim_diff < 1e-4) ? 0 : 1;
}
