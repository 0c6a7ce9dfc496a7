// Philox4x32-10 counter-based random numbers (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC'11). Element i of a random tensor uses counter (offset + i), so
// the numbers depend only on (seed, offset, i): the same on every device, every rank and
// whatever the thread count. Header-only and usable from CUDA device code.
#pragma once
#include <cmath>
#include <cstdint>

#ifndef RG_HOST_DEVICE
#if defined(__CUDACC__)
#define RG_HOST_DEVICE __host__ __device__
#else
#define RG_HOST_DEVICE
#endif
#endif

namespace rg {

struct PhiloxOutput {
  uint32_t v[4];
};

RG_HOST_DEVICE inline uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// One Philox4x32-10 block: the 128-bit counter ctr (4 words, low first) under the 64-bit key
// (k0 low, k1 high), as Random123 defines it (tests/core/test_philox.cpp: its published
// known-answer vectors).
RG_HOST_DEVICE inline PhiloxOutput philox4x32_10_block(const uint32_t ctr[4], uint32_t k0,
                                                       uint32_t k1) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = philox_mulhilo(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = philox_mulhilo(0xCD9E8D57u, c2, &hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return PhiloxOutput{{c0, c1, c2, c3}};
}

// Four 32-bit random words for (seed, counter): the counter's upper 64 bits are 0.
RG_HOST_DEVICE inline PhiloxOutput philox4x32_10(uint64_t seed, uint64_t counter) {
  const uint32_t ctr[4] = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0,
                           0};
  return philox4x32_10_block(ctr, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform in [0, 1) from the top 24 bits (exactly representable in f32).
RG_HOST_DEVICE inline float philox_uniform(uint64_t seed, uint64_t index) {
  PhiloxOutput r = philox4x32_10(seed, index);
  return static_cast<float>(r.v[0] >> 8) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller from two words of the same counter. Computed in double so
// CPU and GPU agree to the last bit of the float result in practice.
RG_HOST_DEVICE inline float philox_normal(uint64_t seed, uint64_t index) {
  PhiloxOutput r = philox4x32_10(seed, index);
  double u1 = (static_cast<double>(r.v[0]) + 1.0) * (1.0 / 4294967296.0);  // (0, 1]
  double u2 = static_cast<double>(r.v[1]) * (1.0 / 4294967296.0);
  const double two_pi = 6.283185307179586;
  return static_cast<float>(sqrt(-2.0 * log(u1)) * cos(two_pi * u2));
}

}  // namespace rg
