// Kernels of the sim-check tests, compiled by clang with sim-check's instrumentation
// (tests/sim_check/meson.build): each broken kernel has a correct twin (broken = false),
// and the line the report must name is marked `// LINE: <name>` in broken_kernels.cpp.
// All pointers are sim device memory.
#pragma once
#include <cstdint>

namespace rg::sim_check_test {

// memcheck: out[i] = in[i] for i <= n (one element too many) or i < n.
void copy_n(float* out, const float* in, int n, bool broken);

// racecheck: each of 64 threads writes buf[t] then reads buf[(t + 1) % 64], with or
// without the __syncthreads between.
void rotate_shared(int* out, bool broken);

// racecheck inside one warp: lanes 0..15 write buf[lane], lanes 16..31 read
// buf[lane - 16] (the higher lanes read after the writers ran), with or without __syncwarp.
void half_warp_exchange(int* out, bool broken);

// initcheck: 64 threads read buf[t] after threads 0..31 (or all) wrote theirs.
void read_shared(int* out, bool broken);

// initcheck on global memory: reads a fresh allocation (broken) or one filled first.
void read_global(int* out, const int* in, int n);

// synccheck: threads 0..31 and 32..63 wait at different __syncthreads (or the same one).
void divergent_barrier(int* out, bool broken);

// synccheck: a full-mask shuffle in a partial warp (48 threads), or a mask of its lanes.
void partial_warp_shuffle(int* out, bool broken);

// The same two bugs in unoptimised kernels, where the shuffle and barrier wrappers stay
// out of line (48 threads: a full-mask shuffle; 64: threads 0..31 and 32..63 at different
// barriers).
void unoptimised_partial_shuffle(int* out);
void unoptimised_divergent_barrier(int* out);

// synccheck: lanes 0..15 shuffle down by 8 with mask 0xffff, so lanes 8..15 read lanes
// outside the mask (broken), or by xor 1 (inside it).
void shuffle_outside_mask(int* out, bool broken);

// racecheck on cp.async (kernels/cuda/ldmatrix.cuh): each of 64 threads copies 16 bytes
// of `in` (256 ints) into its chunk of shared memory, commits, waits for its own group and
// reads its neighbour's chunk, with or without the __syncthreads that orders the copies of
// other threads before the reads.
void async_copy_neighbour(int* out, const int* in, bool broken);

// ---- metrics (answers known): coalesced copy, stride-32 float loads, 32x32 transposes
void coalesced_copy(float* out, const float* in, int n);      // 256 threads per block
void strided_load(float* out, const float* in, int n);        // in has 32 * n floats
void transpose_32(float* out, const float* in, bool padded);  // one 32x32 block

}  // namespace rg::sim_check_test
