// Fused attention on the gpu (cuda and sim), forward and backward: the flash-attention
// recurrence, the same math as the cpu kernel (kernels/cpu/attention.cpp). q [B,T,D],
// k [B,S,D], v [B,S,Dv] contiguous; causal rows see keys j <= i.
// Each block owns `warps` consecutive rows of one batch, one row per warp, and walks the
// other side's rows in tiles staged in shared memory by the whole block (one global read of
// each tile per block instead of one per warp; the version of llm.c's attention progression
// that shares K/V tiles across a block's query rows, without tensor cores):
//   forward: a warp per query row, over K and V tiles, with an online softmax (running max m
//            and sum l, the accumulator rescaled when m grows), so no score is ever stored; it
//            writes out and lse = m + log l.
//   backward, two kernels, no atomics (deterministic):
//     dq:   a warp per query row, over K and V tiles: D_i = dout_i . out_i (kept for the next
//           kernel), then for each key p = exp(scale q.k - lse_i), ds = p (dout_i . v_j - D_i),
//           dq += ds k_j;
//     dkdv: a warp per key row, over tiles of Q, dout, lse and D: over the queries that see
//           it, dv += p dout_i, dk += ds q_i.
// Scores and dot products are warp-shuffle sums in the accumulation type (float for f32 and
// bf16, double for f64). A warp's accumulators (Dv, D or D + Dv values) sit in shared memory
// before the tiles; each lane owns elements lane, lane + 32, ... of them. Tiles hold up to 32
// rows (fewer for wide heads, to fit 48 KiB). bf16, and f32 when TF32 is allowed, at head
// sizes D == Dv of 64 or 128 run on tensor cores instead (attention_mma.cuh); these kernels
// take every other case.
#include <limits>

#include "kernels/contracts.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

struct Geometry {
  int64_t B, T, S, D, Dv;
  bool causal;
  double scale;
};

RG_HD inline int64_t key_end(const Geometry& g, int64_t i) {
  return g.causal ? (i + 1 < g.S ? i + 1 : g.S) : g.S;
}

// This block's rows: first .. first + warps - 1 of batch b (rows_per_batch per batch), one
// per warp; a warp whose row is past the batch's end still helps stage the tiles.
struct BlockRows {
  int warp, lane, warps;
  int64_t b, first;
};
__device__ inline BlockRows block_rows(int64_t rows_per_batch) {
  const int warps = int(blockDim.x) / 32;
  const int64_t blocks_per_batch = (rows_per_batch + warps - 1) / warps;
  return {int(threadIdx.x) / 32, int(threadIdx.x) % 32, warps,
          int64_t(blockIdx.x) / blocks_per_batch, int64_t(blockIdx.x) % blocks_per_batch * warps};
}

RG_HD inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// The shared memory of a block: the warps' accumulators (`per_warp` C values each), then a
// tile of `tile` rows of `width` T values, then `scalars` L arrays of `tile` values.
template <typename C, typename T, typename L>
struct SharedLayout {
  C* acc;
  T* tile;
  L* scalars;
  RG_HD static size_t tile_offset(int warps, int64_t per_warp) {
    return align_up(size_t(warps) * size_t(per_warp) * sizeof(C), 16);
  }
  RG_HD static size_t scalars_offset(int warps, int64_t per_warp, int tile, int64_t width) {
    return align_up(tile_offset(warps, per_warp) + size_t(tile) * size_t(width) * sizeof(T), 16);
  }
};
template <typename C, typename T, typename L>
__device__ inline SharedLayout<C, T, L> shared_layout(unsigned char* raw, int warps,
                                                      int64_t per_warp, int tile, int64_t width) {
  using S = SharedLayout<C, T, L>;
  return {reinterpret_cast<C*>(raw), reinterpret_cast<T*>(raw + S::tile_offset(warps, per_warp)),
          reinterpret_cast<L*>(raw + S::scalars_offset(warps, per_warp, tile, width))};
}

// The block copies n values from global memory to shared memory.
template <typename T>
__device__ inline void stage(T* dst, const T* src, int64_t n) {
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) dst[e] = src[e];
}

// a . b over n elements by the 32 lanes of a warp; every lane gets the sum.
template <typename C, typename T>
__device__ inline C warp_dot(const T* a, const T* b, int64_t n, int lane) {
  C sum = C(0);
  for (int64_t d = lane; d < n; d += 32) sum += convert<C>(a[d]) * convert<C>(b[d]);
  return warp_allreduce(sum, SumOp());
}

// The keys the block's query rows see: all S, or up to its last row's diagonal.
RG_HD inline int64_t block_key_end(const Geometry& g, const BlockRows& r) {
  return key_end(g, (r.first + r.warps < g.T ? r.first + r.warps : g.T) - 1);
}

// Online-softmax state of one query row.
template <typename C>
struct RowSoftmax {
  C m, l;
};

// Folds keys j0 .. j0 + n - 1 (staged in ks, vs) into one query row's state and accumulator.
template <typename C, typename T>
__device__ inline void fold_keys(RowSoftmax<C>& st, C* acc, const T* qi, const T* ks, const T* vs,
                                 int64_t n, const Geometry& g, int lane) {
  const C neg_inf = -std::numeric_limits<C>::infinity();
  for (int64_t jj = 0; jj < n; ++jj) {
    const C s = warp_dot<C>(qi, ks + jj * g.D, g.D, lane) * C(g.scale);
    const C mx = st.m > s ? st.m : s;
    const C correction = st.m == neg_inf ? C(0) : C(m_exp(st.m - mx));
    const C p = C(m_exp(s - mx));
    st.l = st.l * correction + p;
    for (int64_t d = lane; d < g.Dv; d += 32)
      acc[d] = acc[d] * correction + p * convert<C>(vs[jj * g.Dv + d]);
    st.m = mx;
  }
}

template <typename T, typename L>
__global__ void attention_forward_kernel(T* out, L* lse, const T* q, const T* k, const T* v,
                                         Geometry g, int tile) {
  using C = acc_t<T>;
  RG_DYNAMIC_SHARED(unsigned char, raw);
  const BlockRows r = block_rows(g.T);
  const auto sh = shared_layout<C, T, L>(raw, r.warps, g.Dv, tile, g.D + g.Dv);
  const int64_t i = r.first + r.warp, row = r.b * g.T + i;
  const bool active = i < g.T;  // uniform over the warp
  C* acc = sh.acc + int64_t(r.warp) * g.Dv;
  for (int64_t d = r.lane; d < g.Dv; d += 32) acc[d] = C(0);
  RowSoftmax<C> st{-std::numeric_limits<C>::infinity(), C(0)};
  const int64_t keys = block_key_end(g, r);
  for (int64_t j0 = 0; j0 < keys; j0 += tile) {
    const int64_t n = keys - j0 < tile ? keys - j0 : tile;
    T* ks = sh.tile;
    T* vs = sh.tile + n * g.D;
    __syncthreads();  // the previous tile is no longer read
    stage(ks, k + (r.b * g.S + j0) * g.D, n * g.D);
    stage(vs, v + (r.b * g.S + j0) * g.Dv, n * g.Dv);
    __syncthreads();
    const int64_t mine = active ? key_end(g, i) - j0 : 0;
    if (mine > 0) fold_keys(st, acc, q + row * g.D, ks, vs, mine < n ? mine : n, g, r.lane);
  }
  if (!active) return;
  for (int64_t d = r.lane; d < g.Dv; d += 32) out[row * g.Dv + d] = convert<T>(C(acc[d] / st.l));
  if (r.lane == 0) lse[row] = L(st.m + C(m_log(st.l)));
}

template <typename C>
struct PairTerms {
  C p, ds;
};

// For one (query i, key j): p = exp(scale q_i . k_j - lse_i), ds = p (dout_i . v_j - D_i).
template <typename C, typename T>
__device__ inline PairTerms<C> pair_terms(const T* qi, const T* kj, const T* doi, const T* vj,
                                          C lse_i, C delta_i, const Geometry& g, int lane) {
  const C p = C(m_exp(warp_dot<C>(qi, kj, g.D, lane) * C(g.scale) - lse_i));
  return {p, p * (warp_dot<C>(doi, vj, g.Dv, lane) - delta_i)};
}

template <typename T, typename L>
__global__ void attention_dq_kernel(T* dq, L* delta, const T* dout, const T* q, const T* k,
                                    const T* v, const T* out, const L* lse, Geometry g, int tile) {
  using C = acc_t<T>;
  RG_DYNAMIC_SHARED(unsigned char, raw);
  const BlockRows r = block_rows(g.T);
  const auto sh = shared_layout<C, T, L>(raw, r.warps, g.D, tile, g.D + g.Dv);
  const int64_t i = r.first + r.warp, row = r.b * g.T + i;
  const bool active = i < g.T;
  C* acc = sh.acc + int64_t(r.warp) * g.D;
  for (int64_t d = r.lane; d < g.D; d += 32) acc[d] = C(0);
  const T* qi = q + row * g.D;
  const T* doi = dout + row * g.Dv;
  C di = C(0), li = C(0);
  if (active) {
    di = warp_dot<C>(doi, out + row * g.Dv, g.Dv, r.lane), li = C(lse[row]);
    if (r.lane == 0) delta[row] = L(di);
  }
  const int64_t keys = block_key_end(g, r);
  for (int64_t j0 = 0; j0 < keys; j0 += tile) {
    const int64_t n = keys - j0 < tile ? keys - j0 : tile;
    T* ks = sh.tile;
    T* vs = sh.tile + n * g.D;
    __syncthreads();
    stage(ks, k + (r.b * g.S + j0) * g.D, n * g.D);
    stage(vs, v + (r.b * g.S + j0) * g.Dv, n * g.Dv);
    __syncthreads();
    const int64_t mine = active ? key_end(g, i) - j0 : 0;
    for (int64_t jj = 0; jj < mine && jj < n; ++jj) {
      const T* kj = ks + jj * g.D;
      const PairTerms<C> t = pair_terms(qi, kj, doi, vs + jj * g.Dv, li, di, g, r.lane);
      for (int64_t d = r.lane; d < g.D; d += 32) acc[d] += t.ds * convert<C>(kj[d]);
    }
  }
  if (!active) return;
  for (int64_t d = r.lane; d < g.D; d += 32) dq[row * g.D + d] = convert<T>(C(acc[d] * C(g.scale)));
}

// The queries that see any key of the block: from its first key's diagonal (causal) to T.
RG_HD inline int64_t block_query_begin(const Geometry& g, const BlockRows& r) {
  return g.causal ? r.first : 0;
}

// Folds queries i0 .. i0 + n - 1 (staged: qs, dos, lse and delta in sc[0], sc[1]) into key
// row j's dk and dv accumulators.
template <typename C, typename T, typename L>
__device__ inline void fold_queries(C* acc_k, C* acc_v, const T* kj, const T* vj, const T* qs,
                                    const T* dos, const L* lses, const L* deltas, int64_t i0,
                                    int64_t n, int64_t j, const Geometry& g, int lane) {
  for (int64_t ii = g.causal && j > i0 ? j - i0 : 0; ii < n; ++ii) {
    const T* qi = qs + ii * g.D;
    const T* doi = dos + ii * g.Dv;
    const PairTerms<C> t = pair_terms(qi, kj, doi, vj, C(lses[ii]), C(deltas[ii]), g, lane);
    for (int64_t d = lane; d < g.Dv; d += 32) acc_v[d] += t.p * convert<C>(doi[d]);
    for (int64_t d = lane; d < g.D; d += 32) acc_k[d] += t.ds * convert<C>(qi[d]);
  }
}

template <typename T, typename L>
__global__ void attention_dkdv_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k,
                                      const T* v, const L* lse, const L* delta, Geometry g,
                                      int tile) {
  using C = acc_t<T>;
  RG_DYNAMIC_SHARED(unsigned char, raw);
  const BlockRows r = block_rows(g.S);
  const auto sh = shared_layout<C, T, L>(raw, r.warps, g.D + g.Dv, tile, g.D + g.Dv);
  const int64_t j = r.first + r.warp, row = r.b * g.S + j;
  const bool active = j < g.S;
  C* acc_k = sh.acc + int64_t(r.warp) * (g.D + g.Dv);
  C* acc_v = acc_k + g.D;
  for (int64_t d = r.lane; d < g.D; d += 32) acc_k[d] = C(0);
  for (int64_t d = r.lane; d < g.Dv; d += 32) acc_v[d] = C(0);
  for (int64_t i0 = block_query_begin(g, r); i0 < g.T; i0 += tile) {
    const int64_t n = g.T - i0 < tile ? g.T - i0 : tile, at = r.b * g.T + i0;
    T* qs = sh.tile;
    T* dos = sh.tile + n * g.D;
    __syncthreads();
    stage(qs, q + at * g.D, n * g.D);
    stage(dos, dout + at * g.Dv, n * g.Dv);
    stage(sh.scalars, lse + at, n);
    stage(sh.scalars + tile, delta + at, n);
    __syncthreads();
    if (active)
      fold_queries(acc_k, acc_v, k + row * g.D, v + row * g.Dv, qs, dos, sh.scalars,
                   sh.scalars + tile, i0, n, j, g, r.lane);
  }
  if (!active) return;
  for (int64_t d = r.lane; d < g.D; d += 32)
    dk[row * g.D + d] = convert<T>(C(acc_k[d] * C(g.scale)));
  for (int64_t d = r.lane; d < g.Dv; d += 32) dv[row * g.Dv + d] = convert<T>(acc_v[d]);
}

Geometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  RG_KERNEL_CONTRACT(check_attention("attention", q, k, v));
  return {q.size(0), q.size(1), k.size(1), q.size(2), v.size(2), causal, scale};
}

// Warps (one row each) per block: 4, fewer when their accumulators (`per_warp` C values
// each) would take over 16 KiB; the tile then gets up to 32 rows of `width` T values and
// `scalars` L values each within 48 KiB of shared memory in all.
template <typename C, typename T, typename L>
LaunchConfig config_for(const char* name, const Tensor& t, int64_t batches, int64_t rows,
                        int64_t per_warp, int64_t width, int scalars, int* tile) {
  using S = SharedLayout<C, T, L>;
  constexpr size_t kLimit = 49152;
  int warps = 4;
  while (warps > 1 && size_t(warps * per_warp) * sizeof(C) > 16384) warps /= 2;
  auto bytes = [&](int rows_in_tile) {
    return S::scalars_offset(warps, per_warp, rows_in_tile, width) +
           size_t(scalars) * size_t(rows_in_tile) * sizeof(L);
  };
  *tile = 32;
  while (*tile > 1 && bytes(*tile) > kLimit) *tile /= 2;
  RG_CHECK(bytes(*tile) <= kLimit, name, ": head sizes need ", bytes(1),
           " bytes of shared memory per block, over 48 KiB (D + Dv at most ~4000 f32 values)");
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(t);
  cfg.grid = dim3(static_cast<unsigned>(batches * ceil_div(rows, warps)));
  cfg.block = dim3(static_cast<unsigned>(32 * warps));
  cfg.shared_bytes = bytes(*tile);
  return cfg;
}

void run_attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                   const Tensor& v, bool causal, double scale) {
  const Geometry g = geometry_of(q, k, v, causal, scale);
  if (g.B * g.T == 0 || run_attention_mma(out, lse, q, k, v, causal, scale)) return;
  dispatch_dtype<DTypes::floating, bf16>(q.dtype(), "attention", [&]<typename T>(TypeTag<T>) {
    using C = acc_t<T>;
    using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
    int tile = 0;
    LaunchConfig cfg = config_for<C, T, L>("attention", out, g.B, g.T, g.Dv, g.D + g.Dv, 0, &tile);
    launch(attention_forward_kernel<T, L>, cfg, static_cast<T*>(out.data_ptr()),
           static_cast<L*>(lse.data_ptr()), static_cast<const T*>(q.data_ptr()),
           static_cast<const T*>(k.data_ptr()), static_cast<const T*>(v.data_ptr()), g, tile);
  });
}

void run_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                            const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& out, const Tensor& lse, bool causal, double scale) {
  const Geometry g = geometry_of(q, k, v, causal, scale);
  if (run_attention_backward_mma(dq, dk, dv, dout, q, k, v, out, lse, causal, scale)) return;
  const char* op = "attention_backward";
  dispatch_dtype<DTypes::floating, bf16>(q.dtype(), op, [&]<typename T>(TypeTag<T>) {
    using C = acc_t<T>;
    using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
    Tensor delta = empty({g.B * g.T}, lse.dtype(), q.device());
    auto* qp = static_cast<const T*>(q.data_ptr());
    auto* kp = static_cast<const T*>(k.data_ptr());
    auto* vp = static_cast<const T*>(v.data_ptr());
    auto* dop = static_cast<const T*>(dout.data_ptr());
    auto* lp = static_cast<const L*>(lse.data_ptr());
    int tile = 0;
    if (g.B * g.T > 0) {
      LaunchConfig cfg = config_for<C, T, L>(op, dq, g.B, g.T, g.D, g.D + g.Dv, 0, &tile);
      launch(attention_dq_kernel<T, L>, cfg, static_cast<T*>(dq.data_ptr()),
             static_cast<L*>(delta.data_ptr()), dop, qp, kp, vp,
             static_cast<const T*>(out.data_ptr()), lp, g, tile);
    }
    if (g.B * g.S > 0) {
      LaunchConfig cfg = config_for<C, T, L>(op, dk, g.B, g.S, g.D + g.Dv, g.D + g.Dv, 2, &tile);
      launch(attention_dkdv_kernel<T, L>, cfg, static_cast<T*>(dk.data_ptr()),
             static_cast<T*>(dv.data_ptr()), dop, qp, kp, vp, lp,
             static_cast<const L*>(delta.data_ptr()), g, tile);
    }
  });
}

}  // namespace

void register_attention_kernels(KernelTable& k) {
  k.attention = run_attention;
  k.attention_backward = run_attention_backward;
}
}  // namespace rg::RG_BACKEND
