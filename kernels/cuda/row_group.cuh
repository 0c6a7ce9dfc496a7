// A row of a row kernel (softmax, cross-entropy, layernorm) and the group of threads that
// processes it, read once from global memory into registers.
//   WarpGroup:  one warp per row, kWarpRows rows (warps) per block; reductions are
//               __shfl_xor_sync butterflies, so every lane has the result; no barrier.
//   BlockGroup: one block per row; reductions are block all-reductions (block_reduce.cuh).
//   RowCache<T, N>: slot k of a thread holds element tid + k * size of the row (a warp's
//               lanes read neighbouring elements: coalesced). N is a compile-time count, so
//               the slots live in registers. N == kSharedRow keeps the row in the block's
//               dynamic shared memory instead, as T (bf16 stays bf16): each thread stores
//               and later reads only its own elements tid + k * size, so no barrier is
//               needed. N == 0 keeps nothing and re-reads the row in each pass.
// row_shape picks the shape from the row length, dispatch_row_shape instantiates it:
// d <= 1024 a warp with N = 1..32 slots (next power of two of d / 32, except 24 for d of
// 513..768: GPT-2's width 768 in 32 slots would hold a quarter of each lane's registers
// for nothing, and the registers set the occupancy of these kernels), d <= 1024 *
// kBlockSlotBytes / sizeof(acc) a block with 2..8 slots, longer rows a 1024-thread block
// with the row in opt-in dynamic shared memory while it fits the device's limit (227 KiB
// on an H200: 58k f32 elements), and N == 0 beyond. A kernel caching two rows (the
// backwards: dy and y or x) asks for both; when only one fits, kSharedFirst caches its
// first row and re-reads the other.
#pragma once
#include <type_traits>

#include "kernels/cuda/block_reduce.cuh"

namespace rg::RG_BACKEND {

constexpr int kWarpRows = 4;         // rows (warps) per block of the warp-per-row shape
constexpr int kMaxWarpSlots = 32;    // a warp caches rows of up to 32 * 32 elements
constexpr int kBlockSlotBytes = 32;  // register bytes per thread per cached block row
constexpr int kBlockThreads = 1024;  // threads of the block-per-row shapes
constexpr int kSharedRow = -1;       // RowCache slots: the row in dynamic shared memory
constexpr int kSharedFirst = -2;     // shape slots: first row kSharedRow, the others 0
// Shared memory row_shape leaves to the kernels' static __shared__ (block_allreduce's).
constexpr size_t kStaticSharedReserve = 1024;

// The RowCache slots of a kernel's first cached row and of its others under shape slots N.
template <int N>
constexpr int first_row_slots = N == kSharedFirst ? kSharedRow : N;
template <int N>
constexpr int other_row_slots = N == kSharedFirst ? 0 : N;

struct WarpGroup {
  static constexpr int kMaxThreads = 32 * kWarpRows;  // for __launch_bounds__
  __device__ static int64_t row() { return int64_t(blockIdx.x) * kWarpRows + threadIdx.x / 32; }
  __device__ static int tid() { return int(threadIdx.x % 32); }
  __device__ static int size() { return 32; }
  template <typename T, typename Op>
  __device__ static T allreduce(T v, Op op, T) {
    return warp_allreduce(v, op);
  }
};

struct BlockGroup {
  static constexpr int kMaxThreads = kBlockThreads;
  __device__ static int64_t row() { return blockIdx.x; }
  __device__ static int tid() { return int(threadIdx.x); }
  __device__ static int size() { return int(blockDim.x); }
  template <typename T, typename Op>
  __device__ static T allreduce(T v, Op op, T identity) {
    __shared__ T scratch[32];
    return block_allreduce(v, op, identity, scratch);
  }
};

template <typename T, int N>
struct RowCache {
  using C = acc_t<T>;
  static constexpr bool kCached = N != 0;  // each() reads registers or shared memory
  C v[N > 0 ? N : 1];
  const T* p;
  const T* s;  // the row in shared memory (N == kSharedRow)
  int64_t stride, d;
  int tid, size;

  // f(k, i) for each element i of this thread, k its slot (0 when not cached).
  template <typename F>
  __device__ void each_index(F f) const {
    if constexpr (N > 0) {
      RG_UNROLL
      for (int k = 0; k < N; ++k) {
        int64_t i = tid + int64_t(k) * size;
        if (i < d) f(k, i);
      }
    } else {
      for (int64_t i = tid; i < d; i += size) f(0, i);
    }
  }
  __device__ C at(int k, int64_t i) const {
    if constexpr (N > 0)
      return v[k];
    else if constexpr (N == kSharedRow)
      return convert<C>(s[i]);
    else
      return convert<C>(p[i * stride]);
  }
  // f(i, value) for each element i of this thread.
  template <typename F>
  __device__ void each(F f) const {
    each_index([&](int k, int64_t i) { f(i, at(k, i)); });
  }
};

// The row p[i * stride], i < d, cached by the calling thread of group G (kSharedRow: in
// row `shared_row` of the d-element rows of the block's dynamic shared memory).
template <typename T, int N, typename G>
__device__ RowCache<T, N> load_row(const T* p, int64_t stride, int64_t d, int shared_row = 0) {
  static_assert(N >= 0 || N == kSharedRow, "kSharedFirst is a shape, not a RowCache");
  RowCache<T, N> r{};
  r.p = p, r.stride = stride, r.d = d, r.tid = G::tid(), r.size = G::size();
  if constexpr (N == kSharedRow) {
    RG_DYNAMIC_SHARED(T, cache);
    T* row = cache + int64_t(shared_row) * d;
    for (int64_t i = r.tid; i < d; i += r.size) row[i] = p[i * stride];
    r.s = row;
  } else if constexpr (N > 0) {
    RG_UNROLL
    for (int k = 0; k < N; ++k) {
      int64_t i = r.tid + int64_t(k) * r.size;
      r.v[k] = i < d ? convert<acc_t<T>>(p[i * stride]) : acc_t<T>(0);
    }
  }
  return r;
}

struct RowShape {
  bool warp;                // WarpGroup (else BlockGroup)
  int slots;                // N of RowCache, or kSharedFirst
  int threads;              // block size
  size_t shared_bytes = 0;  // dynamic shared memory (kSharedRow, kSharedFirst)
};

inline int next_pow2(int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// The shape for rows of d elements: acc_bytes the size of acc_t<T>, elem_bytes of T and
// `cached` the rows of that length a kernel caches (elem_bytes 0: never in shared memory).
inline RowShape row_shape(int64_t d, int acc_bytes, int elem_bytes = 0, int cached = 1) {
  if (d <= 32 * kMaxWarpSlots) {
    const int64_t per_lane = ceil_div(d, int64_t(32));
    return {true, per_lane > 16 && per_lane <= 24 ? 24 : next_pow2(per_lane), 32 * kWarpRows};
  }
  const int slots = next_pow2(ceil_div(d, int64_t(kBlockThreads)));
  if (slots * acc_bytes <= kBlockSlotBytes)
    return {false, slots, int(ceil_div(ceil_div(d, int64_t(slots)), int64_t(32)) * 32)};
  const size_t row_bytes = size_t(d) * size_t(elem_bytes);
  const size_t limit = max_shared_bytes_optin() - kStaticSharedReserve;
  if (elem_bytes > 0 && row_bytes * cached <= limit)
    return {false, kSharedRow, kBlockThreads, row_bytes * cached};
  if (elem_bytes > 0 && cached > 1 && row_bytes <= limit)
    return {false, kSharedFirst, kBlockThreads, row_bytes};
  return {false, 0, kBlockThreads};
}

// The launch grid, block and dynamic shared memory of `shape` for `rows` rows.
inline void set_row_launch(LaunchConfig& cfg, const RowShape& shape, int64_t rows) {
  cfg.grid = dim3(static_cast<unsigned>(shape.warp ? ceil_div(rows, int64_t(kWarpRows)) : rows));
  cfg.block = dim3(static_cast<unsigned>(shape.threads));
  cfg.shared_bytes = shape.shared_bytes;
  cfg.opt_in_shared = shape.shared_bytes > 0;
}

template <int N>
using Slots = std::integral_constant<int, N>;

// Calls f(Slots<N>{}, TypeTag<G>{}) with the shape's slot count and group (C: the
// accumulation type, whose size row_shape was given; Cached: the rows it was given; slots
// it never picks are not built).
template <typename C, int Cached = 1, typename F>
void dispatch_row_shape(const RowShape& shape, F&& f) {
  using W = TypeTag<WarpGroup>;
  using B = TypeTag<BlockGroup>;
  if (!shape.warp && shape.slots == kSharedRow) return f(Slots<kSharedRow>{}, B{});
  if constexpr (Cached > 1)
    if (!shape.warp && shape.slots == kSharedFirst) return f(Slots<kSharedFirst>{}, B{});
  switch (shape.warp ? shape.slots : -shape.slots) {
    case 1:
      return f(Slots<1>{}, W{});
    case 2:
      return f(Slots<2>{}, W{});
    case 4:
      return f(Slots<4>{}, W{});
    case 8:
      return f(Slots<8>{}, W{});
    case 16:
      return f(Slots<16>{}, W{});
    case 24:
      return f(Slots<24>{}, W{});
    case 32:
      return f(Slots<32>{}, W{});
    case -2:
      return f(Slots<2>{}, B{});
    case -4:
      return f(Slots<4>{}, B{});
    case -8:
      if constexpr (8 * sizeof(C) <= kBlockSlotBytes) return f(Slots<8>{}, B{});
      [[fallthrough]];
    default:
      return f(Slots<0>{}, B{});
  }
}

}  // namespace rg::RG_BACKEND
