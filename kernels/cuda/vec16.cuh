// Vec16<T>: 16 bytes of T (4 floats, 2 doubles, 8 bf16), the widest load or store one thread
// issues, and load16/store16 to move one through an aligned pointer. On sim they go element
// by element through volatile: clang copies a 16-byte aggregate whose address escapes with a
// memcpy that sim-check's load/store hooks never see (docs/kernels.md, blind spots).
#pragma once
#include <bit>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/common.cuh"

namespace rg::RG_BACKEND {

template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kN = 16 / int(sizeof(T));
  T v[kN];
};

#if RG_SIM
// An unsigned integer of T's size: volatile accesses go through it (bf16 is a struct).
template <typename T>
using SameSizeBits =
    std::conditional_t<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
#endif

template <typename T>
__device__ inline Vec16<T> load16(const T* p) {
#if RG_SIM
  using U = SameSizeBits<T>;
  Vec16<T> r;
  for (int k = 0; k < Vec16<T>::kN; ++k)
    r.v[k] = std::bit_cast<T>(U(reinterpret_cast<const volatile U*>(p)[k]));
  return r;
#else
  return *reinterpret_cast<const Vec16<T>*>(p);
#endif
}

template <typename T>
__device__ inline void store16(T* p, const Vec16<T>& r) {
#if RG_SIM
  using U = SameSizeBits<T>;
  for (int k = 0; k < Vec16<T>::kN; ++k)
    reinterpret_cast<volatile U*>(p)[k] = std::bit_cast<U>(r.v[k]);
#else
  *reinterpret_cast<Vec16<T>*>(p) = r;
#endif
}

RG_HD inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace rg::RG_BACKEND
