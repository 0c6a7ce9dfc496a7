// Fused attention on the gpu (cuda and sim), forward and backward: the flash-attention
// recurrence, the same math as the cpu kernel (kernels/cpu/attention.cpp). q [B,T,D],
// k [B,S,D], v [B,S,Dv] contiguous; causal rows see keys j <= i.
//   forward: one warp per query row walks its keys with an online softmax (running max m and
//            sum l, the accumulator rescaled when m grows), so no score is ever stored; it
//            writes out and lse = m + log l.
//   backward, two kernels, no atomics (deterministic):
//     dq:   one warp per query row: D_i = dout_i . out_i (kept for the next kernel), then for
//           each key p = exp(scale q.k - lse_i), ds = p (dout_i . v_j - D_i), dq += ds k_j;
//     dkdv: one warp per key row: over the queries that see it, dv += p dout_i, dk += ds q_i.
// Scores and dot products are warp-shuffle sums in the accumulation type (float for f32 and
// bf16, double for f64). A warp's accumulators (Dv, D or D + Dv values) live in dynamic shared
// memory; each lane owns elements lane, lane + 32, ... so no block sync is needed.
// Left for later (docs/kernels.md): tiles of K and V staged in shared memory for the warps of
// a block, and tensor-core products.
#include <limits>

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

// The row of the B * rows this warp handles (one row per warp of each block), and its lane.
struct WarpRow {
  int warp, lane;
  int64_t row;
};
__device__ inline WarpRow warp_row() {
  const int warp = int(threadIdx.x) / 32;
  return {warp, int(threadIdx.x) % 32, int64_t(blockIdx.x) * (blockDim.x / 32) + warp};
}

// a . b over n elements by the 32 lanes of a warp; every lane gets the sum.
template <typename C, typename T>
__device__ inline C warp_dot(const T* a, const T* b, int64_t n, int lane) {
  C sum = C(0);
  for (int64_t d = lane; d < n; d += 32) sum += convert<C>(a[d]) * convert<C>(b[d]);
  return warp_allreduce(sum, SumOp());
}

template <typename T, typename L>
__global__ void attention_forward_kernel(T* out, L* lse, const T* q, const T* k, const T* v,
                                         Geometry g) {
  using C = acc_t<T>;
  RG_DYNAMIC_SHARED(C, shared);
  const auto [warp, lane, row] = warp_row();  // row over B * T
  if (row >= g.B * g.T) return;               // the whole warp
  const int64_t b = row / g.T, i = row % g.T;
  C* acc = shared + int64_t(warp) * g.Dv;
  const T* qi = q + row * g.D;
  const T* kb = k + b * g.S * g.D;
  const T* vb = v + b * g.S * g.Dv;
  for (int64_t d = lane; d < g.Dv; d += 32) acc[d] = C(0);
  const C neg_inf = -std::numeric_limits<C>::infinity();
  C m = neg_inf, l = C(0);
  for (int64_t j = 0; j < key_end(g, i); ++j) {
    const C s = warp_dot<C>(qi, kb + j * g.D, g.D, lane) * C(g.scale);
    const C mx = m > s ? m : s;
    const C correction = m == neg_inf ? C(0) : C(m_exp(m - mx));
    const C p = C(m_exp(s - mx));
    l = l * correction + p;
    for (int64_t d = lane; d < g.Dv; d += 32)
      acc[d] = acc[d] * correction + p * convert<C>(vb[j * g.Dv + d]);
    m = mx;
  }
  for (int64_t d = lane; d < g.Dv; d += 32) out[row * g.Dv + d] = convert<T>(C(acc[d] / l));
  if (lane == 0) lse[row] = L(m + C(m_log(l)));
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
                                    const T* v, const T* out, const L* lse, Geometry g) {
  using C = acc_t<T>;
  RG_DYNAMIC_SHARED(C, shared);
  const auto [warp, lane, row] = warp_row();  // row over B * T
  if (row >= g.B * g.T) return;               // the whole warp
  const int64_t b = row / g.T, i = row % g.T;
  C* acc = shared + int64_t(warp) * g.D;
  const T* qi = q + row * g.D;
  const T* doi = dout + row * g.Dv;
  const T* kb = k + b * g.S * g.D;
  const T* vb = v + b * g.S * g.Dv;
  const C di = warp_dot<C>(doi, out + row * g.Dv, g.Dv, lane), li = C(lse[row]);
  if (lane == 0) delta[row] = L(di);
  for (int64_t d = lane; d < g.D; d += 32) acc[d] = C(0);
  for (int64_t j = 0; j < key_end(g, i); ++j) {
    const PairTerms<C> t = pair_terms(qi, kb + j * g.D, doi, vb + j * g.Dv, li, di, g, lane);
    for (int64_t d = lane; d < g.D; d += 32) acc[d] += t.ds * convert<C>(kb[j * g.D + d]);
  }
  for (int64_t d = lane; d < g.D; d += 32) dq[row * g.D + d] = convert<T>(C(acc[d] * C(g.scale)));
}

template <typename T, typename L>
__global__ void attention_dkdv_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k,
                                      const T* v, const L* lse, const L* delta, Geometry g) {
  using C = acc_t<T>;
  RG_DYNAMIC_SHARED(C, shared);
  const auto [warp, lane, row] = warp_row();  // row over B * S
  if (row >= g.B * g.S) return;               // the whole warp
  const int64_t b = row / g.S, j = row % g.S;
  C* acc_k = shared + int64_t(warp) * (g.D + g.Dv);
  C* acc_v = acc_k + g.D;
  const T* kj = k + row * g.D;
  const T* vj = v + row * g.Dv;
  for (int64_t d = lane; d < g.D; d += 32) acc_k[d] = C(0);
  for (int64_t d = lane; d < g.Dv; d += 32) acc_v[d] = C(0);
  for (int64_t i = g.causal ? j : 0; i < g.T; ++i) {
    const int64_t at = b * g.T + i;
    const T* qi = q + at * g.D;
    const T* doi = dout + at * g.Dv;
    const PairTerms<C> t = pair_terms(qi, kj, doi, vj, C(lse[at]), C(delta[at]), g, lane);
    for (int64_t d = lane; d < g.Dv; d += 32) acc_v[d] += t.p * convert<C>(doi[d]);
    for (int64_t d = lane; d < g.D; d += 32) acc_k[d] += t.ds * convert<C>(qi[d]);
  }
  for (int64_t d = lane; d < g.D; d += 32) dk[row * g.D + d] = convert<T>(C(acc_k[d] * C(g.scale)));
  for (int64_t d = lane; d < g.Dv; d += 32) dv[row * g.Dv + d] = convert<T>(acc_v[d]);
}

Geometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  RG_DEBUG_ASSERT(q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && q.is_contiguous() &&
                      k.is_contiguous() && v.is_contiguous(),
                  "attention: kernel needs contiguous [B, T, D] operands");
  return {q.size(0), q.size(1), k.size(1), q.size(2), v.size(2), causal, scale};
}

// Warps of one row each per block: 4, fewer when their accumulators (`per_warp` values of
// `bytes` each) would take over 32 KiB of shared memory; one warp must fit in 48 KiB.
LaunchConfig config_for(const char* name, const Tensor& t, int64_t rows, int64_t per_warp,
                        size_t bytes) {
  int warps = 4;
  while (warps > 1 && size_t(warps * per_warp) * bytes > 32768) warps /= 2;
  RG_CHECK(size_t(per_warp) * bytes <= 49152, name, ": head sizes need ", per_warp * bytes,
           " bytes of shared memory per row, over 48 KiB (D + Dv at most 6144 f32 values)");
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(t);
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(rows, warps)));
  cfg.block = dim3(static_cast<unsigned>(32 * warps));
  cfg.shared_bytes = size_t(warps * per_warp) * bytes;
  return cfg;
}

void run_attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                   const Tensor& v, bool causal, double scale) {
  const Geometry g = geometry_of(q, k, v, causal, scale);
  if (g.B * g.T == 0) return;
  dispatch_dtype<DTypes::floating, bf16>(q.dtype(), "attention", [&]<typename T>(TypeTag<T>) {
    using C = acc_t<T>;
    using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
    LaunchConfig cfg = config_for("attention", out, g.B * g.T, g.Dv, sizeof(C));
    launch(attention_forward_kernel<T, L>, cfg, static_cast<T*>(out.data_ptr()),
           static_cast<L*>(lse.data_ptr()), static_cast<const T*>(q.data_ptr()),
           static_cast<const T*>(k.data_ptr()), static_cast<const T*>(v.data_ptr()), g);
  });
}

void run_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                            const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& out, const Tensor& lse, bool causal, double scale) {
  const Geometry g = geometry_of(q, k, v, causal, scale);
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
    if (g.B * g.T > 0)
      launch(attention_dq_kernel<T, L>, config_for(op, dq, g.B * g.T, g.D, sizeof(C)),
             static_cast<T*>(dq.data_ptr()), static_cast<L*>(delta.data_ptr()), dop, qp, kp, vp,
             static_cast<const T*>(out.data_ptr()), lp, g);
    if (g.B * g.S > 0)
      launch(attention_dkdv_kernel<T, L>, config_for(op, dk, g.B * g.S, g.D + g.Dv, sizeof(C)),
             static_cast<T*>(dk.data_ptr()), static_cast<T*>(dv.data_ptr()), dop, qp, kp, vp, lp,
             static_cast<const L*>(delta.data_ptr()), g);
  });
}

}  // namespace

void register_attention_kernels(KernelTable& k) {
  k.attention = run_attention;
  k.attention_backward = run_attention_backward;
}
}  // namespace rg::RG_BACKEND
