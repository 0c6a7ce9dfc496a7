// Shared-memory movement for the warp-level mma (warp_mma.cuh), in the portable dialect:
//   ldmatrix_x4<false>  ldmatrix.sync.aligned.m8n8.x4.shared.b16: four 8 x 8 matrices of
//                       16-bit values (8 rows of 16 bytes each), one row address per lane;
//   ldmatrix_x4<true>   the same with .trans: each matrix arrives transposed;
//   cp_async16          cp.async.cg.shared.global: 16 bytes global -> shared (zeros when
//                       not `valid`: src-size 0), with cp_async_commit / cp_async_wait<N>.
// ldmatrix, as the PTX ISA lays it out (lane = 4 g + t, g = lane / 4, t = lane % 4):
//
//   lanes 0-7 address rows 0-7 of matrix 0, lanes 8-15 of matrix 1, 16-23 of 2, 24-31 of 3
//   register m of lane l, non-trans: matrix m, row g, 16-bit columns 2t, 2t + 1
//                            .trans: matrix m, rows 2t and 2t + 1 of column g (low, high)
//
//            16-bit columns 0 1 | 2 3 | 4 5 | 6 7      (one 32-bit word per lane)
//   row 0:   lane 0            | 1   | 2   | 3
//   row 1:   lane 4            | 5   | 6   | 7    ...  row 7: lanes 28-31
//
// A 32-bit value type (TF32) reads as pairs of 16-bit columns: register m then holds word t
// of row g, so non-trans also loads TF32 A and B fragments (.trans does not: it splits words).
// On sim each lane reads its own 16-byte row with one 16-byte load (sim-check sees a request
// of 32 x 16 bytes, as a GPU's four 8-row phases: 4 wavefronts when the 32 rows fall on
// distinct bank quads per matrix), then a warp collective hands the values out as above.
// cp.async on sim copies at once (an eager completion the PTX rules allow): sim-check sees
// the global load and the shared store of the issuing thread, so racecheck still reports a
// reader in another thread that the kernel did not order after the copy (wait, then a
// barrier), and a wait_group over copies never committed is a synccheck error
// (kernels/sim/async_copy.h).
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/cuda/portability.cuh"
#if RG_SIM
#include "kernels/sim/async_copy.h"
#endif

namespace rg::RG_BACKEND {

#if RG_SIM
using Bits128 = unsigned __int128;

// One lane's part of a sim ldmatrix: its row, and where its four registers go.
struct LdmatrixLane {
  uint32_t row[4];
  uint32_t* out;
};

// 16-bit value `i` (0..7) of a 16-byte row.
inline uint32_t half_of(const uint32_t (&row)[4], int i) {
  return (row[i / 2] >> (16 * (i % 2))) & 0xffffu;
}

template <bool kTrans>
void sim_ldmatrix(void* const lanes[32]) {
  auto lane = [&](int l) -> const LdmatrixLane& { return *static_cast<LdmatrixLane*>(lanes[l]); };
  uint32_t out[32][4];
  for (int l = 0; l < 32; ++l)
    for (int m = 0; m < 4; ++m) {
      const int g = l / 4, t = l % 4;
      if constexpr (kTrans)
        out[l][m] = half_of(lane(8 * m + 2 * t).row, g) | half_of(lane(8 * m + 2 * t + 1).row, g)
                                                              << 16;
      else
        out[l][m] = lane(8 * m + g).row[t];
    }
  for (int l = 0; l < 32; ++l) std::memcpy(lane(l).out, out[l], sizeof(out[l]));
}

template <bool kTrans>
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row,
                        ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  if (reinterpret_cast<uintptr_t>(row) % 16) __trap(site);  // the PTX ISA's alignment
  LdmatrixLane lane;
  const Bits128 bits = *static_cast<const volatile Bits128*>(row);  // one 16-byte request
  std::memcpy(lane.row, &bits, sizeof(bits));
  lane.out = r;
  ::rg::sim::warp_collective(&lane, &sim_ldmatrix<kTrans>, site);
}

inline void cp_async16(void* dst, const void* src, bool valid,
                       ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16) __trap(site);
  const Bits128 bits = valid ? *static_cast<const volatile Bits128*>(src) : Bits128(0);
  *static_cast<volatile Bits128*>(dst) = bits;
  ::rg::sim::async_copy_issued();
}
inline void cp_async_commit() { ::rg::sim::async_copy_commit(); }
// Checks the commit-before-wait rule (kernels/sim/async_copy.h); the copies are done.
template <int N>
inline void cp_async_wait(::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  ::rg::sim::async_copy_wait(site);
}
#else
__device__ inline unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The row at a 32-bit shared-memory address (cheaper to keep in registers than a pointer),
// or at a generic pointer into shared memory.
template <bool kTrans>
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], unsigned row) {
  if constexpr (kTrans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(row));
}
template <bool kTrans>
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  ldmatrix_x4<kTrans>(r, shared_address(row));
}

__device__ inline void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_address(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif

}  // namespace rg::RG_BACKEND
