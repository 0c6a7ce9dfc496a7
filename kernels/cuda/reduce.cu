// reduce: every row of RG_REDUCE_OPS (core/op_table.h; its functor from core/reduce_scalar.h
// is a template parameter) of `in` over sorted unique `dims`; out has the
// keepdim shape (any strides) and in's dtype, int64 for `index` rows (arg ops) (flat row-major
// index in the reduced sub-space; ties -> first index; a NaN beats any number, first NaN wins).
// Folds (sums, products) accumulate in double (int64 for integers) like the cpu kernels.
// Kept dims and reduced dims each travel as an OffsetCalc. The launch shapes:
//   serial: one thread per output loops over the reduction (short or strided reductions);
//   warp:   one warp per output, lanes stride over the reduction (16-byte vectors when it is
//           one aligned dense run) and combine by shuffles: contiguous reductions of 32..8192
//           elements into many outputs (row sums). A block per output spent more time in its
//           two barriers and shared-memory combine than reading: 0.17x a memcpy on an H200
//           for 65536 rows of 1024;
//   block:  one block (32..512 threads) per output, threads stride over the reduction and
//           combine with warp shuffles + shared memory (long contiguous reductions);
//   block chunks: a long contiguous reduction into few outputs (a full sum, a norm) splits
//           each output's range over blockIdx.y, one block per (output, chunk), and combines
//           the chunk partials in a second kernel (as below), so that every SM has blocks;
//   column chunks: a long strided reduction (sum over the rows of a [rows, cols] matrix:
//           bias gradients, norms) has one thread per output and far too few threads to
//           fill a GPU, so the rows are split into chunks over blockIdx.y. Each thread
//           reduces one output over one chunk (a warp reads 32 neighbouring outputs: one
//           coalesced row segment per step) into partials [chunks, outputs], and a second
//           kernel combines each output's chunks in order. The split depends on the shape
//           only, so results are deterministic. Arg ops keep the serial path.
#include <algorithm>
#include <limits>

#include "core/reduce_scalar.h"
#include "kernels/contracts.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/vec16.cuh"

namespace rg::RG_BACKEND {
namespace reduce_detail {  // named: nvcc warns on unused members of internal classes

// One row of RG_REDUCE_OPS (its functor from core/reduce_scalar.h) over input type T.
template <typename Row, typename T>
struct Reducer {
  static constexpr bool kArg = Row::rule == ReduceRule::index;
  using C = acc_t<T>;
  using V = scalar::reduce_acc_t<Row, C>;
  using Out = std::conditional_t<kArg, int64_t, T>;
  struct State {
    V value;
    int64_t index;
  };

  RG_HD static State identity() {
    if constexpr (Row::kind == ReduceKind::fold)
      return {Row::template identity<V>(), 0};
    else
      return {Row::template identity<V>(), std::numeric_limits<int64_t>::max()};
  }
  // Commutative: folds combine; selects keep the winner, the smaller index among equals.
  RG_HD static State pick(State a, State b) {
    if constexpr (Row::kind == ReduceKind::fold) {
      return {scalar::combine<Row>(a.value, b.value), 0};
    } else {
      if (scalar::beats<Row>(a.value, b.value)) return b;
      if (scalar::beats<Row>(b.value, a.value)) return a;
      return a.index <= b.index ? a : b;
    }
  }
  RG_HD static Out finish(State s, int64_t r) {
    if constexpr (kArg)
      return Row::finish(s.value, s.index, r);
    else
      return convert<T>(C(Row::finish(s.value, s.index, r)));
  }
  RG_HD static State element(T x, int64_t i) { return {V(convert<C>(x)), i}; }
};

}  // namespace reduce_detail

namespace {
using reduce_detail::Reducer;

// One thread's reduction of output o (offsets off) over reduction indices [begin, end).
template <typename Row, typename T>
__device__ typename Reducer<Row, T>::State thread_reduce_range(int64_t begin, int64_t end,
                                                               int64_t in_offset,
                                                               const OffsetCalc<1>& reduced,
                                                               const T* in) {
  using R = Reducer<Row, T>;
  typename R::State s = R::identity();
  // Four loads in flight per thread: the column shape has one thread per output.
  RG_UNROLL4
  for (int64_t i = begin; i < end; ++i) {
    int64_t ri;
    reduced.offsets(i, &ri);
    s = R::pick(s, R::element(in[in_offset + ri], i));
  }
  return s;
}

template <typename Row, typename T>
__global__ void reduce_serial_kernel(int64_t outputs, int64_t r, OffsetCalc<2> kept,
                                     OffsetCalc<1> reduced, typename Reducer<Row, T>::Out* out,
                                     const T* in) {
  using R = Reducer<Row, T>;
  int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= outputs) return;
  int64_t off[2];
  kept.offsets(o, off);
  out[off[0]] = R::finish(thread_reduce_range<Row, T>(0, r, off[1], reduced, in), r);
}

// Combines the 32 lanes' states by shuffles; every lane gets the result. The index travels
// only for arg ops (a second shuffle).
template <typename Row, typename T>
__device__ typename Reducer<Row, T>::State warp_combine(typename Reducer<Row, T>::State s) {
  using R = Reducer<Row, T>;
  for (int offset = 16; offset > 0; offset /= 2) {
    typename R::State other{__shfl_xor_sync(0xffffffffu, s.value, offset), 0};
    if constexpr (R::kArg) other.index = __shfl_xor_sync(0xffffffffu, s.index, offset);
    s = R::pick(s, other);
  }
  return s;
}

// Combines the block's per-thread states (warp shuffles, then one warp over the warps'
// results); the result is valid in thread 0.
template <typename Row, typename T>
__device__ typename Reducer<Row, T>::State block_combine(typename Reducer<Row, T>::State s) {
  using R = Reducer<Row, T>;
  __shared__ typename R::V scratch_value[32];
  __shared__ int64_t scratch_index[32];
  s = warp_combine<Row, T>(s);
  unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) scratch_value[warp] = s.value, scratch_index[warp] = s.index;
  __syncthreads();
  if (warp == 0) {
    s = lane < blockDim.x / 32 ? typename R::State{scratch_value[lane], scratch_index[lane]}
                               : R::identity();
    s = warp_combine<Row, T>(s);
  }
  return s;
}

// The warp shape: warp w of the launch reduces output w. `dense`: the reduction is one run of
// stride 1, read in 16-byte vectors where the run starts aligned (a row of a contiguous matrix).
template <typename Row, typename T>
__global__ void reduce_warp_kernel(int64_t outputs, int64_t r, bool dense, OffsetCalc<2> kept,
                                   OffsetCalc<1> reduced, typename Reducer<Row, T>::Out* out,
                                   const T* in) {
  using R = Reducer<Row, T>;
  const int64_t o = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (o >= outputs) return;  // the whole warp: the shuffles below see all 32 lanes
  const int lane = int(threadIdx.x % 32);
  int64_t off[2];
  kept.offsets(o, off);
  typename R::State s = R::identity();
  int64_t tail = 0;
  if (dense && aligned16(in + off[1])) {
    constexpr int kN = Vec16<T>::kN;
    const T* row = in + off[1];
    const int64_t vectors = r / kN;
    RG_UNROLL4
    for (int64_t j = lane; j < vectors; j += 32) {
      const Vec16<T> v = load16(row + j * kN);
      RG_UNROLL
      for (int k = 0; k < kN; ++k) s = R::pick(s, R::element(v.v[k], j * kN + k));
    }
    tail = vectors * kN;
  }
  RG_UNROLL4
  for (int64_t i = tail + lane; i < r; i += 32) {
    int64_t ri;
    reduced.offsets(i, &ri);
    s = R::pick(s, R::element(in[off[1] + ri], i));
  }
  s = warp_combine<Row, T>(s);
  if (lane == 0) out[off[0]] = R::finish(s, r);
}

// The block's threads stride over reduction indices [begin, end) of output blockIdx.x.
template <typename Row, typename T>
__device__ typename Reducer<Row, T>::State block_reduce_range(int64_t begin, int64_t end,
                                                              int64_t in_offset,
                                                              const OffsetCalc<1>& reduced,
                                                              const T* in) {
  using R = Reducer<Row, T>;
  typename R::State s = R::identity();
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    int64_t ri;
    reduced.offsets(i, &ri);
    s = R::pick(s, R::element(in[in_offset + ri], i));
  }
  return block_combine<Row, T>(s);
}

template <typename Row, typename T>
__global__ void reduce_block_kernel(int64_t r, OffsetCalc<2> kept, OffsetCalc<1> reduced,
                                    typename Reducer<Row, T>::Out* out, const T* in) {
  using R = Reducer<Row, T>;
  int64_t off[2];
  kept.offsets(blockIdx.x, off);
  typename R::State s = block_reduce_range<Row, T>(0, r, off[1], reduced, in);
  if (threadIdx.x == 0) out[off[0]] = R::finish(s, r);
}

// A long contiguous reduction into few outputs (a full sum, a gradient norm): block
// (o, chunk) reduces chunk blockIdx.y of output o into partials[chunk][o], combined by
// reduce_combine_chunks_kernel. One block per output alone would leave most SMs idle.
template <typename Row, typename T>
__global__ void reduce_block_chunks_kernel(int64_t outputs, int64_t r, int64_t per_chunk,
                                           OffsetCalc<2> kept, OffsetCalc<1> reduced,
                                           typename Reducer<Row, T>::V* partials, const T* in) {
  using R = Reducer<Row, T>;
  int64_t off[2];
  kept.offsets(blockIdx.x, off);
  const int64_t begin = int64_t(blockIdx.y) * per_chunk;
  const int64_t end = begin + per_chunk < r ? begin + per_chunk : r;
  typename R::State s = block_reduce_range<Row, T>(begin, end, off[1], reduced, in);
  if (threadIdx.x == 0) partials[int64_t(blockIdx.y) * outputs + blockIdx.x] = s.value;
}

// First pass of the column-chunk shape: partials[chunk][o] = the reduction of output o over
// rows [chunk * rows_per_chunk, +rows_per_chunk).
template <typename Row, typename T>
__global__ void reduce_column_chunks_kernel(int64_t outputs, int64_t r, int64_t rows_per_chunk,
                                            OffsetCalc<2> kept, OffsetCalc<1> reduced,
                                            typename Reducer<Row, T>::V* partials, const T* in) {
  int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= outputs) return;
  int64_t off[2];
  kept.offsets(o, off);
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < r ? begin + rows_per_chunk : r;
  partials[int64_t(blockIdx.y) * outputs + o] =
      thread_reduce_range<Row, T>(begin, end, off[1], reduced, in).value;
}

// Second pass: each output combines its chunks in chunk order.
template <typename Row, typename T>
__global__ void reduce_combine_chunks_kernel(int64_t outputs, int64_t chunks, int64_t r,
                                             OffsetCalc<2> kept,
                                             const typename Reducer<Row, T>::V* partials,
                                             typename Reducer<Row, T>::Out* out) {
  using R = Reducer<Row, T>;
  int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= outputs) return;
  int64_t off[2];
  kept.offsets(o, off);
  typename R::State s = R::identity();
  for (int64_t c = 0; c < chunks; ++c) s = R::pick(s, {partials[c * outputs + o], 0});
  out[off[0]] = R::finish(s, r);
}

// Chunks for a strided reduction of r rows into `outputs`: enough threads for an H200
// (132 SMs x 2048), each reducing at least 32 rows; 1 means no split.
int64_t column_chunks(int64_t outputs, int64_t r) {
  constexpr int64_t kThreadsWanted = int64_t(1) << 18;
  constexpr int64_t kMinRowsPerThread = 32;
  const int64_t chunks = std::min(ceil_div(kThreadsWanted, outputs), r / kMinRowsPerThread);
  return std::max<int64_t>(1, std::min<int64_t>(chunks, 65535));
}

// Chunks for block-per-output reductions: about 4 blocks per H200 SM in all, each block's
// threads reducing at least 8 elements each; 1 means no split.
int64_t block_chunks(int64_t outputs, int64_t r, int64_t threads) {
  constexpr int64_t kBlocksWanted = 132 * 4;
  const int64_t chunks = std::min(ceil_div(kBlocksWanted, outputs), r / (8 * threads));
  return std::max<int64_t>(1, std::min<int64_t>(chunks, 65535));
}

// The two-pass shapes: chunk partials of every output, then reduce_combine_chunks_kernel.
// `blocks_per_output`: a block per (output, chunk) (contiguous reductions), else a thread
// per (output, chunk) (strided columns).
template <typename Row, typename T>
void reduce_in_chunks(LaunchConfig cfg, bool blocks_per_output, int64_t threads, const Tensor& out,
                      int64_t outputs, int64_t r, int64_t chunks, const OffsetCalc<2>& kept,
                      const OffsetCalc<1>& reduced, const T* x) {
  using R = Reducer<Row, T>;
  using V = typename R::V;
  const int64_t per_chunk = ceil_div(r, chunks);
  chunks = ceil_div(r, per_chunk);
  const int64_t words = ceil_div(chunks * outputs * int64_t(sizeof(V)), int64_t(8));
  Tensor scratch = empty({words}, DType::i64, out.device());
  auto* partials = static_cast<V*>(scratch.data_ptr());
  if (blocks_per_output) {
    cfg.grid = dim3(static_cast<unsigned>(outputs), static_cast<unsigned>(chunks));
    cfg.block = dim3(static_cast<unsigned>(threads));
    launch(reduce_block_chunks_kernel<Row, T>, cfg, outputs, r, per_chunk, kept, reduced, partials,
           x);
  } else {
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(outputs, 128)), static_cast<unsigned>(chunks));
    cfg.block = dim3(128);
    cfg.uses_sync = false;
    launch(reduce_column_chunks_kernel<Row, T>, cfg, outputs, r, per_chunk, kept, reduced, partials,
           x);
  }
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(outputs, 128)));
  cfg.block = dim3(128);
  cfg.uses_sync = false;
  launch(reduce_combine_chunks_kernel<Row, T>, cfg, outputs, chunks, r, kept,
         static_cast<const V*>(partials), static_cast<typename R::Out*>(out.data_ptr()));
}

template <typename Row, typename T>
void reduce_typed(const char* name, const Tensor& out, const Tensor& in, int64_t outputs, int64_t r,
                  const OffsetCalc<2>& kept, const OffsetCalc<1>& reduced) {
  using R = Reducer<Row, T>;
  auto* o = static_cast<typename R::Out*>(out.data_ptr());
  auto* x = static_cast<const T*>(in.data_ptr());
  bool contiguous_reduction = reduced.ndim > 0 && reduced.strides[reduced.ndim - 1][0] == 1;
  // A strided reduction into few outputs: a block per output (arg ops up to 256 outputs;
  // the others from 32 outputs on take the column chunks, which read coalesced).
  const int64_t few_outputs = R::kArg ? 256 : 32;
  bool use_block = (contiguous_reduction && r >= 64) || (outputs < few_outputs && r >= 64);
  int64_t threads = 32;
  while (threads < r && threads < 512) threads *= 2;
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(out);
  // Arg ops keep one pass: their partials would need the index as well.
  const int64_t chunks = R::kArg     ? 1
                         : use_block ? block_chunks(outputs, r, threads)
                                     : column_chunks(outputs, r);
  const bool use_warp = contiguous_reduction && r >= 32 && r <= 8192 && outputs >= 2048;
  if (use_warp) {
    constexpr int kWarpsPerBlock = 8;
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(outputs, kWarpsPerBlock)));
    cfg.block = dim3(32 * kWarpsPerBlock);  // shuffles: uses_sync stays true
    launch(reduce_warp_kernel<Row, T>, cfg, outputs, r, reduced.ndim == 1, kept, reduced, o, x);
  } else if (chunks > 1) {
    reduce_in_chunks<Row, T>(cfg, use_block, threads, out, outputs, r, chunks, kept, reduced, x);
  } else if (use_block) {
    cfg.grid = dim3(static_cast<unsigned>(outputs));
    cfg.block = dim3(static_cast<unsigned>(threads));
    launch(reduce_block_kernel<Row, T>, cfg, r, kept, reduced, o, x);
  } else {
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(outputs, 128)));
    cfg.block = dim3(128);
    cfg.uses_sync = false;
    launch(reduce_serial_kernel<Row, T>, cfg, outputs, r, kept, reduced, o, x);
  }
}

void run_reduce(ReduceOp op, const Tensor& out, const Tensor& in,
                const std::vector<int64_t>& dims) {
  const char* name = op_name(op);
  RG_KERNEL_CONTRACT(check_reduce(op, out, in, dims));
  const int64_t ndim = in.dim();
  std::vector<bool> is_reduced(ndim, false);
  for (int64_t d : dims) is_reduced[d] = true;
  Shape kept_shape, reduced_shape;
  Strides kept_out, kept_in, reduced_in;
  for (int64_t d = 0; d < ndim; ++d) {
    if (is_reduced[d]) {
      reduced_shape.push_back(in.size(d));
      reduced_in.push_back(in.stride(d));
    } else {
      kept_shape.push_back(in.size(d));
      kept_out.push_back(out.stride(d));
      kept_in.push_back(in.stride(d));
    }
  }
  int64_t outputs = numel_of(kept_shape), r = numel_of(reduced_shape);
  if (outputs == 0) return;
  auto kept = make_offset_calc<2>(name, kept_shape, {&kept_out, &kept_in});
  auto reduced = make_offset_calc<1>(name, reduced_shape, {&reduced_in});
  dispatch_dtype<DTypes::numeric, bf16>(in.dtype(), name, [&]<typename T>(TypeTag<T>) {
    scalar::with_reduction(op, [&]<typename Row>(Row) {
      reduce_typed<Row, T>(name, out, in, outputs, r, kept, reduced);
    });
  });
}

}  // namespace

void register_reduce_kernels(KernelTable& k) { k.reduce = run_reduce; }
}  // namespace rg::RG_BACKEND
