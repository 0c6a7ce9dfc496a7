// The portable CUDA dialect every kernel in kernels/cuda/ is written in. Compiled by nvcc
// it is plain CUDA; compiled by g++ (the `sim` device) it maps each CUDA construct onto the
// interpreter in kernels/sim/: threadIdx & co. read the current fiber, __syncthreads() is a
// real barrier, warp shuffles and votes exchange values across the 32 lanes, atomics are
// real atomics, and `__shared__` becomes `static thread_local` (blocks of a launch run one
// after another on the launching host thread, so that storage is the block's own).
// Kernels never use <<<>>>: launch(kernel, {.name, .grid, .block, ...}, args...) is the
// one launch path of both builds and checks the launch shape, throwing rg::Error naming
// the kernel. Dynamic shared memory: RG_DYNAMIC_SHARED(float, buf) declares `float* buf`.
// All kernel code lives in namespace rg::RG_BACKEND (rg::cuda or rg::sim), so both
// compilations of a file link into one library.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/error.h"

#if defined(__CUDACC__)
// ======================================================================== nvcc: real CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/check.h"

#define RG_SIM 0
#define RG_BACKEND cuda
#define RG_BACKEND_DEVICE ::rg::DeviceType::cuda
#define RG_HD __host__ __device__
#define RG_UNROLL _Pragma("unroll")
#define RG_UNROLL4 _Pragma("unroll 4")
#define RG_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char rg_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(rg_dynamic_shared_)

namespace rg::cuda {
using gpu_stream_t = cudaStream_t;
}

#else
// ======================================================================== g++: the sim device
#include "kernels/sim/check/check.h"
#include "kernels/sim/interpreter.h"
#include "kernels/sim/sticky_error.h"
#include "kernels/sim/stream_queue.h"

#define RG_SIM 1
#define RG_BACKEND sim
#define RG_BACKEND_DEVICE ::rg::DeviceType::sim
#define RG_HD
#define RG_UNROLL
#define RG_UNROLL4
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
#define threadIdx (::rg::sim::tls_thread->thread_idx)
#define blockIdx (::rg::sim::tls_block->block_idx)
#define blockDim (::rg::sim::tls_block->block_dim)
#define gridDim (::rg::sim::tls_block->grid_dim)
#define RG_DYNAMIC_SHARED(T, name) \
  T* name = reinterpret_cast<T*>(::rg::sim::tls_block->dynamic_shared)

namespace rg::sim {
using gpu_stream_t = void*;
// The device's opt-in limit of shared memory per block (cuda: queried from the device).
inline size_t max_shared_bytes_optin() { return kMaxSharedBytesOptin; }
}  // namespace rg::sim

constexpr int warpSize = 32;

// Each barrier and warp op takes its call site as a last, defaulted argument (see
// rg::sim::CallSite): sim's reports name the kernel's line however the wrapper was inlined.
inline void __syncthreads(::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  ::rg::sim::syncthreads(site);
}
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  ::rg::sim::warp_op(::rg::sim::WarpOpKind::sync, mask, 0, 0, 32, site);
}
template <typename T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32,
              ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return ::rg::sim::warp_exchange(::rg::sim::WarpOpKind::shfl, mask, v, src_lane, width, site);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                 ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return ::rg::sim::warp_exchange(::rg::sim::WarpOpKind::shfl_up, mask, v, int(delta), width, site);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                   ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return ::rg::sim::warp_exchange(::rg::sim::WarpOpKind::shfl_down, mask, v, int(delta), width,
                                  site);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                  ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return ::rg::sim::warp_exchange(::rg::sim::WarpOpKind::shfl_xor, mask, v, lane_mask, width, site);
}
inline unsigned __ballot_sync(unsigned mask, int pred,
                              ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return unsigned(::rg::sim::warp_op(::rg::sim::WarpOpKind::ballot, mask, pred != 0, 0, 32, site));
}
inline int __all_sync(unsigned mask, int pred,
                      ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return int(::rg::sim::warp_op(::rg::sim::WarpOpKind::all, mask, pred != 0, 0, 32, site));
}
inline int __any_sync(unsigned mask, int pred,
                      ::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  return int(::rg::sim::warp_op(::rg::sim::WarpOpKind::any, mask, pred != 0, 0, 32, site));
}

// ---- atomics: real atomics, since several host threads may run kernels on shared memory
template <typename T>
T rg_sim_atomic_float_add(T* address, T v) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits* word = reinterpret_cast<Bits*>(address);
  Bits old_bits = __atomic_load_n(word, __ATOMIC_RELAXED), new_bits;
  T old;
  do {
    std::memcpy(&old, &old_bits, sizeof(T));
    T sum = old + v;
    std::memcpy(&new_bits, &sum, sizeof(T));
  } while (!__atomic_compare_exchange_n(word, &old_bits, new_bits, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  return old;
}
inline float atomicAdd(float* a, float v) { return rg_sim_atomic_float_add(a, v); }
inline double atomicAdd(double* a, double v) { return rg_sim_atomic_float_add(a, v); }
inline int atomicAdd(int* a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }
inline unsigned atomicAdd(unsigned* a, unsigned v) {
  return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);
}
inline int atomicCAS(int* a, int expected, int desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
inline unsigned atomicCAS(unsigned* a, unsigned expected, unsigned desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
inline unsigned short atomicCAS(unsigned short* a, unsigned short expected,
                                unsigned short desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long expected,
                                    unsigned long long desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
inline int atomicExch(int* a, int v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }
inline int atomicMax(int* a, int v) {
  int old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (old < v &&
         !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
// A device fault: ends the launch and poisons its device (kernels/sim/sticky_error.h).
[[noreturn]] inline void __trap(::rg::sim::CallSite site = ::rg::sim::CallSite::here()) {
  ::rg::sim::trap(site);
}

// ---- math intrinsics that <cmath> lacks
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
#endif

// Everything below is per backend (rg::cuda or rg::sim): the two compilations of a kernel
// file must not emit the same symbols, or the linker would keep one of them for both (at
// -O0 a cuda kernel's launch could then run in the sim interpreter).
namespace rg::RG_BACKEND {

// Where and how to launch a kernel; see launch().
struct LaunchConfig {
  const char* name = "?";  // for error messages
  dim3 grid;
  dim3 block;
  size_t shared_bytes = 0;  // dynamic shared memory
  // true lets shared_bytes go past rg::max_shared_bytes() (48 KiB) up to the device's
  // max_shared_bytes_optin(): launch() first raises the kernel's
  // cudaFuncAttributeMaxDynamicSharedMemorySize to that limit, once per kernel.
  bool opt_in_shared = false;
  gpu_stream_t stream = nullptr;
  // false promises the kernel calls no __syncthreads/warp op: sim then runs each block as
  // a plain loop over its threads (much faster); breaking the promise throws.
  bool uses_sync = true;
};

#if RG_SIM
// Runs `kernel` over the grid of `spec` in the interpreter; each thread gets its own copy
// of `params`.
template <typename... Params>
void run_on_sim(void (*kernel)(Params...), const sim::LaunchSpec& spec,
                std::tuple<std::decay_t<Params>...>& params) {
  struct Context {
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...>* params;
  } ctx{kernel, &params};
  sim::KernelBody body;
  body.ctx = &ctx;
  body.call = [](void* c) {
    auto* x = static_cast<Context*>(c);
    std::apply(x->kernel, *x->params);
  };
  sim::run_grid(spec, body);
}
#endif

// The one way to launch a kernel (instead of <<<>>>), in both builds. On sim, work on a
// delayed stream (kernels/sim/stream_queue.h) is queued with a copy of its arguments.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), const LaunchConfig& cfg, Args&&... args) {
#if RG_SIM
  const void* entry = reinterpret_cast<const void*>(kernel);
  if (cfg.opt_in_shared) sim::opt_in_dynamic_shared(entry, cfg.stream);  // cuda's order
  sim::check_sticky_error(sim::device_of_token(cfg.stream), "launch", cfg.name);
  sim::count_launch();
  std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
  sim::LaunchSpec spec;
  spec.name = cfg.name;
  spec.entry = entry;
  spec.grid = cfg.grid;
  spec.block = cfg.block;
  spec.shared_bytes = cfg.shared_bytes;
  spec.uses_sync = cfg.uses_sync;
  spec.stream = cfg.stream;
  if (sim::is_delayed(cfg.stream)) {
    sim::enqueue(cfg.stream,
                 [kernel, spec, params]() mutable { run_on_sim(kernel, spec, params); });
    return;
  }
  run_on_sim(kernel, spec, params);
#else
  if (cfg.opt_in_shared) cuda::opt_in_dynamic_shared(reinterpret_cast<const void*>(kernel));
  cuda::check_launch_shape(cfg.name, cfg.grid, cfg.block, cfg.shared_bytes, cfg.opt_in_shared);
  // clang-format off
  kernel<<<cfg.grid, cfg.block, cfg.shared_bytes, cfg.stream>>>(std::forward<Args>(args)...);
  // clang-format on
  cuda::check_launched(cfg.name);
#endif
}

template <typename T>
RG_HD inline T min_of(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
RG_HD inline T max_of(T a, T b) {
  return a < b ? b : a;
}
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace rg::RG_BACKEND
