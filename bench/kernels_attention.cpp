// Tensor-core attention (kernels/cuda/attention_mma.cuh), causal, bf16, forward and backward
// at head sizes 64 and 128 and T 1024 and 4096, with the tokens of GPT-2 small at batch 8
// (96 heads of 1024, 24 of 4096) on cuda; on sim one head of T 64 and 128, a launch check.
// FLOPs: the causal half of the forward's 4 T^2 D per head (two matrix products) and of the
// backward's 10 T^2 D (five: the scores again, dP, dV, dQ, dK). The fraction is of the H100's
// dense bf16 peak (the H200's is the same).
#include "bench/kernels_attention.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "bench/kernels_timing.h"

namespace rg::bench {

void attention_table(Device device) {
  const KernelTable& k = kernel_table(device.type);
  const bool gpu = device.is_cuda();
  constexpr double kPeakBf16 = 989e12;  // H100 SXM, dense
  constexpr int64_t kTokens = 96 * 1024;
  for (int64_t D : {64, 128}) {
    const std::array<int64_t, 2> lengths =
        gpu ? std::array<int64_t, 2>{1024, 4096} : std::array<int64_t, 2>{64, 128};
    for (int64_t T : lengths) {
      const int64_t heads = gpu ? kTokens / T : 1;
      const double scale = 1.0 / std::sqrt(double(D));
      Tensor q = filled({heads, T, D}, DType::bf16, device, 0.01);
      Tensor out = empty({heads, T, D}, DType::bf16, device),
             lse = empty({heads, T}, DType::f32, device);
      Tensor dout = filled({heads, T, D}, DType::bf16, device, 0.02);
      Tensor dq = empty({heads, T, D}, DType::bf16, device),
             dk = empty({heads, T, D}, DType::bf16, device),
             dv = empty({heads, T, D}, DType::bf16, device);
      const int iters = gpu ? 10 : 1;
      const double fwd_ms =
          time_ms(device, iters, [&] { k.attention(out, lse, q, q, q, true, scale); });
      const double bwd_ms = time_ms(device, iters, [&] {
        k.attention_backward(dq, dk, dv, dout, q, q, q, out, lse, true, scale);
      });
      const double fwd_flops = 4.0 * heads * T * T * D / 2, bwd_flops = 2.5 * fwd_flops;
      for (auto [name, flops, ms] :
           {std::tuple{"fwd", fwd_flops, fwd_ms}, std::tuple{"bwd", bwd_flops, bwd_ms}}) {
        const double tflops = flops / ms / 1e9;
        std::printf(
            "attention %s bf16 causal T %lld head %lld x%lld: %8.3f ms %7.1f TFLOP/s, %.2f "
            "of %.0f peak\n",
            name, static_cast<long long>(T), static_cast<long long>(D),
            static_cast<long long>(heads), ms, tflops, tflops / (kPeakBf16 / 1e12),
            kPeakBf16 / 1e12);
      }
    }
  }
}

}  // namespace rg::bench
