// The kernels of tests/sim_check (see broken_kernels.h), in the portable dialect and
// compiled for sim by clang with sim-check's hooks. Lines a report must name carry a
// `// LINE: <name>` marker, which the test looks up in this file.
#include "tests/sim_check/broken_kernels.h"

#include "kernels/cuda/ldmatrix.cuh"
#include "kernels/cuda/portability.cuh"

namespace rg::sim_check_test {
namespace {

using sim::launch;
using sim::LaunchConfig;

LaunchConfig config(const char* name, dim3 grid, dim3 block, bool uses_sync = true) {
  LaunchConfig c;
  c.name = name;
  c.grid = grid;
  c.block = block;
  c.uses_sync = uses_sync;
  return c;
}

__global__ void copy_n_kernel(float* out, const float* in, int n, int last) {
  int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= last) out[i] = in[i];  // LINE: overrun
  (void)n;
}

__global__ void rotate_kernel(int* out, bool sync) {
  __shared__ int buf[64];
  unsigned t = threadIdx.x;
  buf[t] = int(t);  // LINE: rotate write
  if (sync) __syncthreads();
  out[t] = buf[(t + 1) % 64];  // LINE: rotate read
}

__global__ void exchange_kernel(int* out, bool sync) {
  __shared__ int buf[16];
  unsigned lane = threadIdx.x;
  if (lane < 16) buf[lane] = int(lane) * 3;  // LINE: exchange write
  if (sync) __syncwarp();
  out[lane] = lane >= 16 ? buf[lane - 16] : 0;  // LINE: exchange read
}

__global__ void read_shared_kernel(int* out, unsigned writers) {
  __shared__ int buf[64];
  unsigned t = threadIdx.x;
  if (t < writers) buf[t] = int(t);
  __syncthreads();
  out[t] = buf[t];  // LINE: uninit read
}

__global__ void read_global_kernel(int* out, const int* in) {
  unsigned t = threadIdx.x;
  out[t] = in[t] + 1;  // LINE: global read
}

__global__ void divergent_kernel(int* out, bool diverge) {
  __shared__ int buf[64];
  unsigned t = threadIdx.x;
  buf[t] = int(t);
  if (diverge && t >= 32) {
    out[t] = -1;
    __syncthreads();  // LINE: divergent
    out[t] += buf[t ^ 32];
  } else {
    __syncthreads();
    out[t] = buf[t ^ 32];
  }
}

__global__ void partial_shuffle_kernel(int* out, bool full_mask) {
  unsigned t = threadIdx.x;
  unsigned mask = full_mask || t < 32 ? 0xffffffffu : 0x0000ffffu;
  out[t] = __shfl_xor_sync(mask, int(t), 1);  // LINE: partial shuffle
}

__global__ void outside_mask_kernel(int* out, bool broken) {
  unsigned t = threadIdx.x;
  int v = int(t);
  if (t < 16 && broken) v = __shfl_down_sync(0xffffu, v, 8);  // LINE: outside mask
  if (t < 16 && !broken) v = __shfl_xor_sync(0xffffu, v, 1);
  out[t] = v;
}

__global__ void coalesced_copy_kernel(float* out, const float* in) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

__global__ void strided_load_kernel(float* out, const float* in) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[size_t(i) * 32];
}

__global__ void async_copy_kernel(int* out, const int* in, bool sync) {
  __shared__ __align__(16) int buf[64 * 4];
  unsigned t = threadIdx.x;
  sim::cp_async16(buf + 4 * t, in + 4 * t, true);
  sim::cp_async_commit();
  sim::cp_async_wait<0>();
  if (sync) __syncthreads();
  out[t] = buf[4 * ((t + 63) % 64)];  // LINE: async read
}

// The classic tiled transpose: a row of the tile is written per warp, a column read back.
// Without padding a column's 32 words share one bank (32-way conflict).
template <int kPitch>
__global__ void transpose_kernel(float* out, const float* in) {
  __shared__ float tile[32 * kPitch];
  unsigned x = threadIdx.x, y = threadIdx.y;
  tile[y * kPitch + x] = in[y * 32 + x];
  __syncthreads();
  out[y * 32 + x] = tile[x * kPitch + y];
}

// The two synccheck bugs again, in kernels clang does not optimise: the dialect's wrappers
// (__shfl_xor_sync, __syncthreads) stay out of line, as any compiler may leave them (an
// inlining choice that differs between instruction sets). A report must still name the
// kernel's line, not the wrapper's. (A float shuffle: the out-of-line wrapper cannot
// tail-call the interpreter, so its return address lies in the wrapper.)
[[clang::optnone]] __global__ void unoptimised_shuffle_kernel(int* out) {
  unsigned t = threadIdx.x;
  out[t] = int(__shfl_xor_sync(0xffffffffu, float(t), 1));  // LINE: unoptimised shuffle
}

[[clang::optnone]] __global__ void unoptimised_divergent_kernel(int* out) {
  unsigned t = threadIdx.x;
  if (t >= 32)
    __syncthreads();  // LINE: unoptimised divergent
  else
    __syncthreads();  // LINE: unoptimised barrier
  out[t] = 1;
}

}  // namespace

void copy_n(float* out, const float* in, int n, bool broken) {
  launch(copy_n_kernel, config("copy_n", dim3((n + 63) / 64), dim3(64), false), out, in, n,
         broken ? n : n - 1);
}
void rotate_shared(int* out, bool broken) {
  launch(rotate_kernel, config("rotate_shared", dim3(1), dim3(64)), out, !broken);
}
void half_warp_exchange(int* out, bool broken) {
  launch(exchange_kernel, config("half_warp_exchange", dim3(1), dim3(32)), out, !broken);
}
void read_shared(int* out, bool broken) {
  launch(read_shared_kernel, config("read_shared", dim3(1), dim3(64)), out, broken ? 32u : 64u);
}
void read_global(int* out, const int* in, int n) {
  launch(read_global_kernel, config("read_global", dim3(1), dim3(unsigned(n)), false), out, in);
}
void divergent_barrier(int* out, bool broken) {
  launch(divergent_kernel, config("divergent_barrier", dim3(1), dim3(64)), out, broken);
}
void partial_warp_shuffle(int* out, bool broken) {
  launch(partial_shuffle_kernel, config("partial_warp_shuffle", dim3(1), dim3(48)), out, broken);
}
void unoptimised_partial_shuffle(int* out) {
  launch(unoptimised_shuffle_kernel, config("unoptimised_shuffle", dim3(1), dim3(48)), out);
}
void unoptimised_divergent_barrier(int* out) {
  launch(unoptimised_divergent_kernel, config("unoptimised_divergent", dim3(1), dim3(64)), out);
}
void shuffle_outside_mask(int* out, bool broken) {
  launch(outside_mask_kernel, config("shuffle_outside_mask", dim3(1), dim3(32)), out, broken);
}
void coalesced_copy(float* out, const float* in, int n) {
  launch(coalesced_copy_kernel, config("coalesced_copy", dim3(unsigned(n / 256)), dim3(256), false),
         out, in);
}
void strided_load(float* out, const float* in, int n) {
  launch(strided_load_kernel, config("strided_load", dim3(unsigned(n / 256)), dim3(256), false),
         out, in);
}
void async_copy_neighbour(int* out, const int* in, bool broken) {
  launch(async_copy_kernel, config("async_copy_neighbour", dim3(1), dim3(64)), out, in, !broken);
}
void transpose_32(float* out, const float* in, bool padded) {
  if (padded)
    launch(transpose_kernel<33>, config("transpose_padded", dim3(1), dim3(32, 32)), out, in);
  else
    launch(transpose_kernel<32>, config("transpose", dim3(1), dim3(32, 32)), out, in);
}

}  // namespace rg::sim_check_test
