// The elementwise engine behind unary, binary, where, copy and fill: out[i] = f(in_k[i]...)
// over out's shape, inputs already broadcast to it (expand views, stride 0).
// Contiguous fast path: every operand contiguous -> each thread handles V consecutive
//   elements, V = 16 bytes of the widest operand type (4 f32, 8 bf16, 2 f64), as 128-bit
//   loads and stores. A view that starts off a 16-byte boundary first runs its head (< V
//   elements, one per thread) when every operand is off by the same element count, so the
//   body is aligned; otherwise (operands misaligned differently) the same loop is scalar.
// Strided path: shape and per-operand strides (in elements) travel in a small POD
//   (OffsetCalc, up to 8 dims after merging dims that are contiguous in every operand);
//   one thread per element turns its row-major index into each operand's offset. When the
//   element count and every operand's largest offset fit in 31 bits (any tensor under 8 GiB
//   of f32), the index math is 32-bit with each size's division precomputed as a multiply
//   and shift (OffsetCalc32, fast_divider.cuh): no 64-bit div/rem per dimension.
// Strided rows of 16 bytes: when every operand's innermost (merged) dim has stride 1, its
//   size is a multiple of V, every outer stride a multiple of V and every pointer 16-byte
//   aligned (a bias row broadcast over a matrix: strides {0, 1}), each thread maps the first
//   of V consecutive elements through the 32-bit offset calculator and moves all V as one
//   vector per operand: one index computation per V elements, not per element.
// Launch: 256 threads per block, 1-D grid; no barriers or warp ops (uses_sync = false).
#pragma once
#include <array>
#include <bit>
#include <type_traits>
#include <utility>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/fast_divider.cuh"

namespace rg::RG_BACKEND {

constexpr int kMaxDims = 8;
constexpr int kElementwiseBlock = 256;

template <int N>
struct OffsetCalc {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][N];  // [dim][operand], in elements

  RG_HD void offsets(int64_t linear, int64_t* off) const {
    if (ndim == 1) {  // one dim after merging (most reductions): no division
      for (int k = 0; k < N; ++k) off[k] = linear * strides[0][k];
      return;
    }
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t i = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += i * strides[d][k];
    }
  }
};

// The same map in 32-bit arithmetic, for tensors whose offsets all fit (fits_32bit).
template <int N>
struct OffsetCalc32 {
  int ndim = 0;
  FastDivider sizes[kMaxDims];
  uint32_t strides[kMaxDims][N];

  RG_HD void offsets(uint32_t linear, uint32_t* off) const {
    if (ndim == 1) {
      for (int k = 0; k < N; ++k) off[k] = linear * strides[0][k];
      return;
    }
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      uint32_t i;
      linear = sizes[d].divmod(linear, &i);
      for (int k = 0; k < N; ++k) off[k] += i * strides[d][k];
    }
  }
};

// True when n elements and every operand's largest offset are below 2^31 (strides >= 0).
template <int N>
bool fits_32bit(const OffsetCalc<N>& calc, int64_t n) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  if (n >= kLimit) return false;
  for (int k = 0; k < N; ++k) {
    int64_t last = 0;
    for (int d = 0; d < calc.ndim; ++d) {
      if (calc.strides[d][k] < 0) return false;
      last += (calc.sizes[d] - 1) * calc.strides[d][k];
    }
    if (last >= kLimit) return false;
  }
  return true;
}

template <int N>
OffsetCalc32<N> narrow_to_32bit(const OffsetCalc<N>& calc) {
  OffsetCalc32<N> out;
  out.ndim = calc.ndim;
  for (int d = 0; d < calc.ndim; ++d) {
    out.sizes[d] = FastDivider(uint32_t(calc.sizes[d]));
    for (int k = 0; k < N; ++k) out.strides[d][k] = uint32_t(calc.strides[d][k]);
  }
  return out;
}

// Builds the offset calculator for `shape`, dropping size-1 dims and merging neighbours that
// are contiguous in every operand; throws naming `op` when more than 8 dims remain.
template <int N>
OffsetCalc<N> make_offset_calc(const char* op, const Shape& shape,
                               const std::array<const Strides*, N>& strides) {
  // Collected innermost first, then reversed.
  int64_t sizes[64];
  int64_t st[64][N];
  int nd = 0;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    bool merge = nd > 0;
    for (int k = 0; k < N && merge; ++k) merge = (*strides[k])[d] == st[nd - 1][k] * sizes[nd - 1];
    if (merge) {
      sizes[nd - 1] *= shape[d];
    } else {
      RG_CHECK(nd < 64, op, ": too many dims");
      sizes[nd] = shape[d];
      for (int k = 0; k < N; ++k) st[nd][k] = (*strides[k])[d];
      ++nd;
    }
  }
  RG_CHECK(nd <= kMaxDims, op, ": tensor of shape ", shape_str(shape), " has ", nd,
           " non-mergeable dims; the gpu kernels handle at most ", kMaxDims);
  OffsetCalc<N> calc;
  calc.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    calc.sizes[d] = sizes[nd - 1 - d];
    for (int k = 0; k < N; ++k) calc.strides[d][k] = st[nd - 1 - d][k];
  }
  return calc;
}

// Elements per thread on the contiguous path: 16 bytes of the widest operand.
template <typename Out, typename... In>
constexpr int vec_width() {
  size_t widest = sizeof(Out);
  ((widest = sizeof(In) > widest ? sizeof(In) : widest), ...);
  return widest >= 16 ? 1 : int(16 / widest);
}

// V elements as one 16-byte (or smaller) access. bool travels as bytes: clang copies an
// aggregate of 16 bools with a memcpy, which sim-check's load/store hooks do not see.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  std::conditional_t<std::is_same_v<T, bool>, uint8_t, T> v[V];
};

// How the contiguous path splits n elements: `head` scalar elements first (0 when every
// pointer is aligned), then aligned V-vectors from element `head` on; vectors = false when
// no common head aligns every operand (each then keeps its scalar loads).
struct VecPlan {
  bool vectors = false;
  int64_t head = 0;
};

// addresses[k] and itemsizes[k] of each operand, out first; V elements per vector.
inline VecPlan plan_vectors(const uintptr_t* addresses, const size_t* itemsizes, int operands,
                            int V, int64_t n) {
  const uintptr_t out_bytes = itemsizes[0] * V, misaligned = addresses[0] % out_bytes;
  if (misaligned % itemsizes[0] != 0) return {};  // out not even element-aligned
  const int64_t head = misaligned == 0 ? 0 : int64_t((out_bytes - misaligned) / itemsizes[0]);
  for (int k = 1; k < operands; ++k)
    if ((addresses[k] + uintptr_t(head) * itemsizes[k]) % (itemsizes[k] * V) != 0) return {};
  return {true, head < n ? head : n};
}

// out[0 .. V) = f(in[0 .. V)...), each operand moved as one aligned vector.
template <int V, typename Out, typename F, typename... In>
__device__ inline void apply_vector(const F& f, Out* out, const In*... in) {
  Vec<Out, V> r;
  RG_UNROLL
  for (int j = 0; j < V; ++j) r.v[j] = f(reinterpret_cast<const Vec<In, V>*>(in)->v[j]...);
#if RG_SIM  // clang may store the aggregate with a memcpy (a memset for one-byte values),
  // which sim-check's store hooks never see: one volatile store per element instead
  using Bits = std::conditional_t<
      sizeof(Out) == 1, uint8_t,
      std::conditional_t<sizeof(Out) == 2, uint16_t,
                         std::conditional_t<sizeof(Out) == 4, uint32_t, uint64_t>>>;
  for (int j = 0; j < V; ++j)
    reinterpret_cast<volatile Bits*>(out)[j] = std::bit_cast<Bits>(Out(r.v[j]));
#else
  *reinterpret_cast<Vec<Out, V>*>(out) = r;
#endif
}

// Thread t runs element t of the head (t < head), then the V elements from head + t * V:
// as one vector when Vectors and all V are in range, else one by one.
template <int V, bool Vectors, typename Out, typename F, typename... In>
__global__ void __launch_bounds__(kElementwiseBlock)
    contiguous_kernel(int64_t n, int64_t head, F f, Out* out, const In*... in) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < head) out[t] = f(in[t]...);
  const int64_t base = head + t * V;
  if (Vectors && base + V <= n) {
    apply_vector<V>(f, out + base, (in + base)...);
  } else {
    RG_UNROLL
    for (int j = 0; j < V; ++j)
      if (base + j < n) out[base + j] = f(in[base + j]...);
  }
}

template <typename Out, typename F, typename Index, typename... In, size_t... I>
RG_HD inline void apply_at(std::index_sequence<I...>, const Index* off, const F& f, Out* out,
                           const In*... in) {
  out[off[0]] = f(in[off[I + 1]]...);
}

// Calc is OffsetCalc (64-bit) or OffsetCalc32 (Index uint32_t).
template <typename Index, typename Calc, typename Out, typename F, typename... In>
__global__ void __launch_bounds__(kElementwiseBlock)
    strided_kernel(int64_t n, Calc calc, F f, Out* out, const In*... in) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Index off[1 + sizeof...(In)];
  calc.offsets(Index(i), off);
  apply_at(std::index_sequence_for<In...>{}, off, f, out, in...);
}

template <int V, typename Out, typename F, typename... In, size_t... I>
__device__ inline void apply_vector_at(std::index_sequence<I...>, const uint32_t* off, const F& f,
                                       Out* out, const In*... in) {
  apply_vector<V>(f, out + off[0], (in + off[I + 1])...);
}

// Thread t runs elements [t V, t V + V), all in one row (see "Strided rows" above).
template <int V, int N, typename Out, typename F, typename... In>
__global__ void __launch_bounds__(kElementwiseBlock)
    strided_rows_kernel(int64_t n, OffsetCalc32<N> calc, F f, Out* out, const In*... in) {
  const int64_t first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (first >= n) return;
  uint32_t off[N];
  calc.offsets(uint32_t(first), off);
  apply_vector_at<V>(std::index_sequence_for<In...>{}, off, f, out, in...);
}

// True when strided_rows_kernel applies: innermost strides 1, sizes and outer strides
// multiples of V, every address aligned to V of its own elements.
template <int N>
bool rows_take_vectors(const OffsetCalc<N>& calc, int V, const uintptr_t* addresses,
                       const size_t* itemsizes) {
  if (V == 1 || calc.ndim == 0 || calc.sizes[calc.ndim - 1] % V != 0) return false;
  for (int k = 0; k < N; ++k) {
    if (calc.strides[calc.ndim - 1][k] != 1 || addresses[k] % (itemsizes[k] * V) != 0) return false;
    for (int d = 0; d + 1 < calc.ndim; ++d)
      if (calc.strides[d][k] % V != 0) return false;
  }
  return true;
}

// Runs out = f(ins...) elementwise. Out and In... are the storage types of the tensors.
template <typename Out, typename... In, typename F>
void elementwise(const char* name, const F& f, const Tensor& out,
                 const std::array<Tensor, sizeof...(In)>& ins) {
  int64_t n = out.numel();
  if (n == 0) return;
  gpu_stream_t stream = stream_for(out);
  bool contiguous = out.is_contiguous();
  for (const Tensor& t : ins)
    contiguous = contiguous && t.is_contiguous() && t.shape() == out.shape();
  auto call = [&](auto kernel, int64_t threads, auto&&... extra) {
    LaunchConfig cfg;
    cfg.name = name;
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(threads, kElementwiseBlock)));
    cfg.block = dim3(kElementwiseBlock);
    cfg.stream = stream;
    cfg.uses_sync = false;
    return std::apply(
        [&](const auto&... in) {
          launch(kernel, cfg, n, extra..., f, static_cast<Out*>(out.data_ptr()),
                 static_cast<const In*>(in.data_ptr())...);
        },
        ins);
  };
  constexpr int V = vec_width<Out, In...>();
  std::array<uintptr_t, 1 + sizeof...(In)> addresses{reinterpret_cast<uintptr_t>(out.data_ptr())};
  const std::array<size_t, 1 + sizeof...(In)> itemsizes{sizeof(Out), sizeof(In)...};
  for (size_t k = 0; k < ins.size(); ++k)
    addresses[k + 1] = reinterpret_cast<uintptr_t>(ins[k].data_ptr());
  if (contiguous) {
    const VecPlan plan = plan_vectors(addresses.data(), itemsizes.data(), 1 + sizeof...(In), V, n);
    if (plan.vectors)  // enough threads for the head (< V) and for the vectors after it
      call(contiguous_kernel<V, true, Out, F, In...>,
           std::max<int64_t>(plan.head, ceil_div(n - plan.head, V)), plan.head);
    else
      call(contiguous_kernel<V, false, Out, F, In...>, ceil_div(n, V), int64_t(0));
    return;
  }
  std::array<const Strides*, 1 + sizeof...(In)> strides;
  strides[0] = &out.strides();
  if constexpr (sizeof...(In) > 0)
    for (size_t k = 0; k < sizeof...(In); ++k) strides[k + 1] = &ins[k].strides();
  constexpr int N = 1 + sizeof...(In);
  auto calc = make_offset_calc<N>(name, out.shape(), strides);
  if (fits_32bit(calc, n) && rows_take_vectors(calc, V, addresses.data(), itemsizes.data()))
    call(strided_rows_kernel<V, N, Out, F, In...>, n / V, narrow_to_32bit(calc));
  else if (fits_32bit(calc, n))
    call(strided_kernel<uint32_t, OffsetCalc32<N>, Out, F, In...>, n, narrow_to_32bit(calc));
  else
    call(strided_kernel<int64_t, OffsetCalc<N>, Out, F, In...>, n, calc);
}

}  // namespace rg::RG_BACKEND
