// Warp-level tensor-core products in the portable dialect: D = A B + C by one warp, with
// A 16 x K row-major, B K x 8 (the ".col" operand), C and D 16 x 8 in f32. Two shapes:
//   MmaBf16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (products exact in f32)
//   MmaTf32: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (inputs rounded to TF32)
// Each lane holds fragments laid out as the PTX ISA documents them for these shapes; the
// tables below (a_row/a_col, b_k/b_n, c_row/c_col) are that layout and the only copy of
// it: load_a/load_b read it, and sim's collective (all 32 lanes arrive, kernels/sim/
// interpreter.h) scatters the 32 lanes' fragments back into matrices with it. Lane =
// 4 * group + thread_in_group. nvcc emits the PTX instruction; sim computes in f32.
#pragma once
#include "core/tf32.h"
#include "kernels/cuda/common.cuh"

namespace rg::RG_BACKEND {

// Rounds an f32 to TF32 (10-bit mantissa): cvt.rna on a GPU; sim rounds to nearest even
// like its cuBLAS shim (kernels/sim/cublas_shim.cpp); the two differ only on exact ties.
RG_HD inline float to_tf32(float x) {
#if RG_SIM
  return round_to_tf32(x);  // core/tf32.h
#else
  uint32_t u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return bits_to_float(u);
#endif
}

// The fragment of element r of C/D (4 per lane), both shapes.
RG_HD inline int c_row(int lane, int r) { return lane / 4 + 8 * (r / 2); }
RG_HD inline int c_col(int lane, int r) { return 2 * (lane % 4) + r % 2; }

// m16n8k16, bf16: A holds 8 values (a register packs values 2i, 2i + 1, low half first),
// B 4 values.
struct MmaBf16 {
  using In = bf16;
  static constexpr int K = 16, kA = 8, kB = 4;
  RG_HD static int a_row(int lane, int i) { return lane / 4 + 8 * ((i / 2) % 2); }
  RG_HD static int a_col(int lane, int i) { return 2 * (lane % 4) + i % 2 + 8 * (i / 4); }
  RG_HD static int b_k(int lane, int i) { return 2 * (lane % 4) + i % 2 + 8 * (i / 2); }
  RG_HD static int b_n(int lane, int) { return lane / 4; }
  // A value i of a lane is the same lane's C element c_element(i) of the 8-column tile
  // c_tile(i) (of two adjacent ones): accumulators feed the next product with no exchange.
  RG_HD static int c_tile(int i) { return i / 4; }
  RG_HD static int c_element(int i) { return 2 * ((i / 2) % 2) + i % 2; }
  RG_HD static In from_float(float x) { return float_to_bf16(x); }
  RG_HD static void pack(uint32_t* regs, int i, In v) {
    regs[i / 2] = i % 2 ? (regs[i / 2] & 0xffffu) | uint32_t(v.bits) << 16 : uint32_t(v.bits);
  }
  RG_HD static float unpack(const uint32_t* regs, int i) {
    return bf16_to_float(bf16{uint16_t(regs[i / 2] >> (16 * (i % 2)))});
  }
};

// m16n8k8, tf32: A holds 4 values, B 2, one per register (f32 bits, already TF32).
struct MmaTf32 {
  using In = float;
  static constexpr int K = 8, kA = 4, kB = 2;
  RG_HD static int a_row(int lane, int i) { return lane / 4 + 8 * (i % 2); }
  RG_HD static int a_col(int lane, int i) { return lane % 4 + 4 * (i / 2); }
  RG_HD static int b_k(int lane, int i) { return lane % 4 + 4 * i; }
  RG_HD static int b_n(int lane, int) { return lane / 4; }
  RG_HD static In from_float(float x) { return to_tf32(x); }
  RG_HD static void pack(uint32_t* regs, int i, In v) { regs[i] = float_to_bits(v); }
  RG_HD static float unpack(const uint32_t* regs, int i) { return bits_to_float(regs[i]); }
};

// A fragment from `at(row, col)` (row < 16, col < K), B's from `at(k, n)` (n < 8).
template <typename M, typename F>
__device__ inline void load_a(uint32_t (&a)[4], F at, int lane) {
  for (int i = 0; i < M::kA; ++i) M::pack(a, i, at(M::a_row(lane, i), M::a_col(lane, i)));
}
template <typename M, typename F>
__device__ inline void load_b(uint32_t (&b)[2], F at, int lane) {
  for (int i = 0; i < M::kB; ++i) M::pack(b, i, at(M::b_k(lane, i), M::b_n(lane, i)));
}

#if RG_SIM
// One lane's part of a sim mma: its fragments, and where its accumulators live.
struct MmaLane {
  const uint32_t* a;
  const uint32_t* b;
  float* c;
};

// The warp's product: gathers A and B from the 32 lanes' fragments, then each lane's C.
template <typename M>
void sim_mma(void* const lanes[32]) {
  float a[16][M::K], b[M::K][8];
  for (int l = 0; l < 32; ++l) {
    const auto* x = static_cast<const MmaLane*>(lanes[l]);
    for (int i = 0; i < M::kA; ++i) a[M::a_row(l, i)][M::a_col(l, i)] = M::unpack(x->a, i);
    for (int i = 0; i < M::kB; ++i) b[M::b_k(l, i)][M::b_n(l, i)] = M::unpack(x->b, i);
  }
  for (int l = 0; l < 32; ++l) {
    float* c = static_cast<const MmaLane*>(lanes[l])->c;
    for (int r = 0; r < 4; ++r) {
      float sum = c[r];
      for (int k = 0; k < M::K; ++k) sum += a[c_row(l, r)][k] * b[k][c_col(l, r)];
      c[r] = sum;
    }
  }
}

// c += A B over the warp (every lane of a full warp calls it).
template <typename M>
inline void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  MmaLane lane{a, b, c};
  ::rg::sim::warp_collective(&lane, &sim_mma<M>, site);
}
#else
template <typename M>
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<M, MmaBf16>)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

}  // namespace rg::RG_BACKEND
