// The sim interpreter: runs CUDA-dialect kernels (kernels/cuda/*.cu compiled by g++) on
// the CPU. Each CUDA thread of a block is a fiber (fiber_switch.h) with a small stack; the fibers
// of a block run on the launching host thread, one warp after another, each until it
// reaches a sync point (__syncthreads or a warp op) or returns. A barrier releases only
// when every thread of the block is waiting at it; a warp op resolves when every lane of
// its mask is waiting at it. Anything else (a barrier reached by part of a block, a warp op
// missing lanes) throws rg::Error naming the kernel: sim never hangs. Blocks run one after
// another, so `__shared__` can be per-host-thread static storage (see portability.cuh).
// All interpreter state is thread_local: several host threads may launch at once.
// See docs/sim.md for the full story and how to debug a kernel in gdb.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/launch_limits.h"

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace rg::sim {

// What the kernel body sees as threadIdx/blockIdx/blockDim/gridDim.
struct ThreadCoords {
  uint3 thread_idx;
  unsigned linear = 0;  // x + y*bx + z*bx*by; lane = linear % 32, warp = linear / 32
};
struct BlockCoords {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  unsigned char* dynamic_shared = nullptr;
};

// Updated by the scheduler on every switch between fibers (same host thread).
extern thread_local ThreadCoords* tls_thread;
extern thread_local BlockCoords* tls_block;

// A non-owning callable: the per-thread body of a launch (calls the kernel once).
struct KernelBody {
  void (*call)(void* ctx) = nullptr;
  void* ctx = nullptr;
};

struct LaunchSpec {
  const char* name = "?";
  const void* entry = nullptr;  // the kernel function (sim-check names it for occupancy)
  dim3 grid, block;
  size_t shared_bytes = 0;
  bool uses_sync = true;   // false: run the threads of a block as a plain loop, no fibers
  void* stream = nullptr;  // the stream token launched on: its device (sticky_error.h)
};

// The sim device's opt-in limit of shared memory per block: an H200's 227 KiB
// (cudaDevAttrMaxSharedMemoryPerBlockOptin).
constexpr size_t kMaxSharedBytesOptin = 227 * 1024;

// cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes): launches
// of `entry` may then ask for up to `bytes` of dynamic shared memory (without it, up to
// rg::max_shared_bytes()). Throws rg::Error above kMaxSharedBytesOptin, as CUDA fails.
void set_max_dynamic_shared(const void* entry, size_t bytes);
// The dynamic shared memory a launch of `entry` may ask for.
size_t max_dynamic_shared(const void* entry);
// launch()'s opt-in (LaunchConfig::opt_in_shared): raises `entry`'s attribute to
// kMaxSharedBytesOptin, once per kernel and device (the stream token's; opt_in_once). Like
// cudaFuncSetAttribute it fails on a device with a sticky error.
void opt_in_dynamic_shared(const void* entry, void* stream);

// Runs the whole grid on the calling thread; throws rg::Error on a bad launch or a sync
// error, or rethrows what the kernel threw. A launch on a device with a sticky error
// (sticky_error.h) throws it instead.
void run_grid(const LaunchSpec& spec, KernelBody body);
// The launch the calling thread is running (null outside one).
const LaunchSpec* current_launch();

// ---- sync points, called from kernel code

// Where kernel code calls a barrier or warp op. The dialect's wrappers (portability.cuh)
// take it as a default argument, CallSite::here(), which the compiler evaluates at the
// call: the kernel's own file and line, whatever it inlined and with or without line
// tables. (A return address named the wrapper's own line wherever it stayed out of line.)
struct CallSite {
  const char* file = nullptr;
  int line = 0;
  static constexpr CallSite here(const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
    return {f, l};
  }
  // The same line of the same file (the name's copies of different objects may differ).
  friend bool operator==(CallSite a, CallSite b) {
    return a.line == b.line &&
           (a.file == b.file || (a.file && b.file && std::strcmp(a.file, b.file) == 0));
  }
};

void syncthreads(CallSite site);
// The dialect's __trap(): ends the launch with cudaErrorLaunchFailure, naming the kernel,
// block, thread and line, and poisons the launch's device (sticky_error.h).
[[noreturn]] void trap(CallSite site);

enum class WarpOpKind : uint8_t {
  sync,
  shfl,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  all,
  any,
  collective
};
// Deposits `value` (<= 8 bytes) for the lanes of `mask`, waits for them, returns the word
// the op gives this lane (the source lane's value, or the vote result).
uint64_t warp_op(WarpOpKind kind, unsigned mask, uint64_t value, int arg, int width, CallSite site);

// A warp collective beyond shuffles and votes (e.g. mma.sync, kernels/cuda/warp_mma.cuh):
// all 32 lanes of a full warp arrive, each with a pointer to its own data (on its stack);
// once all wait, `fn` runs once with the 32 pointers (lane order), reading each lane's
// inputs and writing its outputs, and then the lanes continue. Every lane must pass the
// same `fn`.
using WarpCollectiveFn = void (*)(void* const lanes[32]);
void warp_collective(void* lane_data, WarpCollectiveFn fn, CallSite site);

template <typename T>
T warp_exchange(WarpOpKind kind, unsigned mask, T value, int arg, int width, CallSite site) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp op on a large type");
  uint64_t word = 0;
  std::memcpy(&word, &value, sizeof(T));
  word = warp_op(kind, mask, word, arg, width, site);
  T out;
  std::memcpy(&out, &word, sizeof(T));
  return out;
}

}  // namespace rg::sim
