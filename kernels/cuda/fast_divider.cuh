// Unsigned 32-bit division by a divisor fixed before the launch, without a divide instruction.
// A GPU has no integer divider: `n / d` on a runtime `d` compiles to a ~20-instruction
// sequence (and 64-bit division to a call of ~70). The strided elementwise kernels divide
// every element's index by each dimension's size, so the divisor is turned on the host into
// a multiplier and a shift (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994):
//   shift = ceil(log2(d)),  magic = floor(2^32 * (2^shift - d) / d) + 1
//   n / d = (mulhi(n, magic) + n) >> shift        for every n < 2^32
// The sum is formed in 64 bits, so it cannot overflow; d = 1 gives shift 0, magic 1.
#pragma once
#include <cstdint>

#include "kernels/cuda/portability.cuh"

namespace rg::RG_BACKEND {

struct FastDivider {
  uint32_t divisor = 1;
  uint32_t magic = 0;
  uint32_t shift = 0;

  FastDivider() = default;
  explicit FastDivider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t(1) << shift) < d) ++shift;
    magic = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }

  RG_HD uint32_t div(uint32_t n) const {
    uint64_t high = (uint64_t(n) * magic) >> 32;  // nvcc emits mul.hi.u32
    return uint32_t((high + n) >> shift);
  }
  // The quotient, and the remainder in *rem.
  RG_HD uint32_t divmod(uint32_t n, uint32_t* rem) const {
    uint32_t q = div(n);
    *rem = n - q * divisor;
    return q;
  }
};

}  // namespace rg::RG_BACKEND
