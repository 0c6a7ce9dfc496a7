// Row statistics of a row group (row_group.cuh), on every thread of the group.
//   row_mean_m2: a cached row (registers, shared memory) takes two cheap passes over the
//            cache, the mean, then the sum of squared deviations: no division per element.
//            On an H200 the one-pass Welford held layernorm at 0.47x a memcpy (0.88x after).
//            A row read from memory takes Welford, so it is read once. (The same two passes
//            for softmax's max and sum of exp ran 0.35x against the online MaxSum's 0.78x on
//            rows of 1024, so the softmax kernels keep MaxSum.) One-pass statistics merge
//            across threads: warp_allreduce and block_allreduce take their merge as the op.
//   MaxSum:  online softmax: the running max m and sum s of exp(x - m); a larger x rescales
//            s. Softmax and cross-entropy need only this one pass over the row. A row of
//            -inf ends with m == -inf; finish() turns it into (0, 0), so 1 / sum and
//            log(sum) make its outputs NaN, as PyTorch and the cpu kernels do.
//   Welford: count, mean and sum of squared deviations (Chan's merge): layernorm's mean and
//            variance in one pass, stable in f32 (no E[x^2] - E[x]^2 cancellation).
#pragma once
#include <limits>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {

template <typename C>
struct MaxSum {
  C m, s;

  __device__ static MaxSum identity() { return {-std::numeric_limits<C>::infinity(), C(0)}; }
  // exp(from - to) for to >= from; 1 when equal (also for -inf == -inf)
  __device__ static C rescale(C from, C to) { return from == to ? C(1) : m_exp(from - to); }
  __device__ void add(C x) {
    if (x > m)
      s = s * rescale(m, x) + C(1), m = x;
    else
      s += rescale(x, m);  // a NaN x makes s NaN
  }
  __device__ void store_to(MaxSum& dst) const { dst.m = m, dst.s = s; }
  __device__ MaxSum shuffle_xor(int mask) const {
    return {RG_BACKEND::shuffle_xor(m, mask), RG_BACKEND::shuffle_xor(s, mask)};
  }
  __device__ MaxSum finish() const { return m == identity().m ? MaxSum{C(0), C(0)} : *this; }
};

struct MaxSumOp {
  template <typename C>
  __device__ MaxSum<C> operator()(MaxSum<C> a, MaxSum<C> b) const {
    C m = a.m < b.m ? b.m : a.m;
    return {m, a.s * MaxSum<C>::rescale(a.m, m) + b.s * MaxSum<C>::rescale(b.m, m)};
  }
};

template <typename C>
struct Welford {
  C n, mean, m2;

  __device__ void add(C x) {
    n += C(1);
    C delta = x - mean;
    mean += delta / n;
    m2 += delta * (x - mean);
  }
  __device__ void store_to(Welford& dst) const { dst.n = n, dst.mean = mean, dst.m2 = m2; }
  __device__ Welford shuffle_xor(int mask) const {
    return {RG_BACKEND::shuffle_xor(n, mask), RG_BACKEND::shuffle_xor(mean, mask),
            RG_BACKEND::shuffle_xor(m2, mask)};
  }
};

struct WelfordOp {
  template <typename C>
  __device__ Welford<C> operator()(Welford<C> a, Welford<C> b) const {
    if (b.n == C(0)) return a;
    if (a.n == C(0)) return b;
    C n = a.n + b.n, delta = b.mean - a.mean, wb = b.n / n;
    return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb};
  }
};

// Mean and sum of squared deviations of the row `r` (d elements) of group G.
template <typename C, typename Row, typename G>
__device__ inline void row_mean_m2(const Row& r, int64_t d, G, C* mean, C* m2) {
  if constexpr (Row::kCached) {
    C s = C(0);
    r.each([&](int64_t, C v) { s += v; });
    const C mu = G::allreduce(s, SumOp(), C(0)) / C(d);
    C q = C(0);
    r.each([&](int64_t, C v) { q += (v - mu) * (v - mu); });
    *mean = mu, *m2 = G::allreduce(q, SumOp(), C(0));
  } else {
    Welford<C> st{C(0), C(0), C(0)};
    r.each([&](int64_t, C v) { st.add(v); });
    st = G::allreduce(st, WelfordOp(), Welford<C>{C(0), C(0), C(0)});
    *mean = st.mean, *m2 = st.m2;
  }
}

}  // namespace rg::RG_BACKEND
