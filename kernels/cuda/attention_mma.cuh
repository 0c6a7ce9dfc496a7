// Tensor-core attention, FlashAttention-2 style, for bf16 (mma m16n8k16) and f32 when TF32
// is allowed (m16n8k8, gpu::allow_tf32()); head sizes D == Dv == 64 or 128. Same contract
// as attention.cu (q [B,T,D], k [B,S,D], v [B,S,D] contiguous, causal rows see j <= i; lse
// in f32), which calls it first and keeps its own kernel for everything else.
// A block is 4 warps; each warp owns 16 rows (an mma's M). Tiles of 64 rows live in dynamic
// shared memory as the inputs' bytes (bf16, or f32 rounded to TF32 as fragments load), zero
// past the end; launches opt in past 48 KiB.
//   forward: the block's 64 query rows stay in shared memory; per 64-key tile S = Q K^T by
//            mma, masked and scaled, the online softmax (row max m and sum l) in registers
//            (a row's 8 values of an 8-column tile sit on the 4 lanes of a quad), P rounded
//            to the input type and O += P V by mma: bf16 feeds the accumulator registers
//            straight back as A fragments (FlashAttention-2's register reuse); TF32's A
//            layout differs, so its P goes through the warp's 16 x 64 scratch tile. Writes
//            out = O / l and lse = m + log l.
//   backward, no atomics (deterministic), P recomputed from lse:
//     dq:   a block of 64 query rows over key tiles: D_i = dout_i . out_i (written for dkdv),
//           dS = P (dO V^T - D_i), dQ += dS K;
//     dkdv: a block of 64 key rows over query tiles: P^T, dP^T = V dO^T, dV += P^T dO,
//           dK += dS^T Q.
// Tiles arrive by cp.async, double-buffered: the next K/V (or Q/dO) tile streams in while
// the warps compute on this one; fragments come by ldmatrix from padded (bf16) or
// XOR-swizzled (TF32) rows, with no bank conflicts (layout: attention_mma_tiles.cuh;
// counters: docs/kernels.md). Q, K/V (dq) and K, V (dkdv) arrive once per block.
//   forward shared memory:  Q | K0 V0 | K1 V1 | TF32 scratch (4 warps x 16 x 64 f32)
//   dq:                     Q dO | K0 V0 | K1 V1 | scratch
//   dkdv:                   K V | Q0 dO0 | Q1 dO1 | scratch | lse delta (64 f32 each)
#pragma once
#include "kernels/cuda/attention_mma_tiles.cuh"

namespace rg::RG_BACKEND {
namespace attention_mma {

// The online softmax over one key tile: masks and scales s, folds the tile's row maxima
// into m (rescaling l and o), and leaves p = exp(s - m) in s and its row sums in l (per
// lane; summed over the quad at the end).
template <int kD>
__device__ inline void softmax_tile(float (&s)[kTileN][4], float (&m)[2], float (&l)[2],
                                    float (&o)[kD / 8][4], const Geometry& g, int64_t row0,
                                    int64_t j0, int lane) {
  float mx[2] = {m[0], m[1]};
  for (int nt = 0; nt < kTileN; ++nt)
    for (int r = 0; r < 4; ++r) {
      const bool seen = sees(g, row0 + c_row(lane, r), j0 + nt * 8 + c_col(lane, r));
      s[nt][r] = seen ? s[nt][r] * g.scale : neg_inf();
      mx[r / 2] = fmaxf(mx[r / 2], s[nt][r]);
    }
  float base[2], correction[2];
  for (int h = 0; h < 2; ++h) {
    mx[h] = quad_max(mx[h]);
    base[h] = mx[h] == neg_inf() ? 0.f : mx[h];  // a row that has seen no key yet
    correction[h] = expf(m[h] - base[h]);
    m[h] = mx[h];
    l[h] *= correction[h];
  }
  for (int nt = 0; nt < kTileN; ++nt)
    for (int r = 0; r < 4; ++r) {
      s[nt][r] = expf(s[nt][r] - base[r / 2]);
      l[r / 2] += s[nt][r];
    }
  for (auto& t : o)
    for (int r = 0; r < 4; ++r) t[r] *= correction[r / 2];
}

// Writes a warp's 16 x kD accumulator tile (times `scale`) to rows row0.. of dst, up to
// row `count`.
template <int kD, typename T>
__device__ inline void write_rows(T* dst, const float (&acc)[kD / 8][4], int64_t row0,
                                  int64_t count, const float (&scale)[2], int lane) {
  for (int nt = 0; nt < kD / 8; ++nt)
    for (int r = 0; r < 4; ++r) {
      const int64_t row = row0 + c_row(lane, r);
      if (row < count)
        dst[row * kD + nt * 8 + c_col(lane, r)] = convert<T>(acc[nt][r] * scale[r / 2]);
    }
}

// The block's shared memory: 64-row tiles of kD values of In from `raw`, then the warps'
// TF32 scratch tiles, then f32 values.
template <typename M, int kD>
struct SharedTiles {
  using In = typename M::In;
  In* raw;
  int tiles;
  __device__ Tile<In, kD> tile(int i) const { return {raw + i * Tile<In, kD>::kValues}; }
  __device__ Tile<float, kTile> scratch(int warp) const {
    return {reinterpret_cast<float*>(raw + tiles * Tile<In, kD>::kValues) + warp * kRows * kTile};
  }
  __device__ float* floats() const {
    return reinterpret_cast<float*>(raw + tiles * Tile<In, kD>::kValues) + scratch_values<M>();
  }
};

// A step of a walk over tiles streamed two at a time into buffers at tiles `first` (even
// steps: `odd` 0) and first + 2 (odd steps): between two barriers, stage(other buffer)
// starts the next step's copies (where there is a next step), and the wait makes this
// step's complete. Returns the buffer of this step.
template <typename Stage>
__device__ inline int next_pair(int first, int odd, Stage stage) {
  const int now = first + 2 * odd;
  __syncthreads();  // the previous step no longer reads the other buffer
  stage(first + 2 - 2 * odd);
  cp_async_commit();
  cp_async_wait<1>();  // everything but the group just committed: this step's tiles
  __syncthreads();
  return now;
}

template <typename M, int kD, typename T>
__global__ void forward_kernel(T* out, float* lse, const T* q, const T* k, const T* v, Geometry g) {
  static_assert(std::is_same_v<T, typename M::In>, "tiles hold the inputs' bytes");
  RG_DYNAMIC_SHARED(T, raw);
  const SharedTiles<M, kD> sh{raw, 5};
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t b = blockIdx.x / blocks_per_batch(g.T);
  const int64_t first = blockIdx.x % blocks_per_batch(g.T) * kTile, row0 = first + warp * kRows;
  const T *kb = k + b * g.S * kD, *vb = v + b * g.S * kD;
  const int64_t keys = keys_for(g, first);
  auto stage_kv = [&](int buffer, int64_t j0) {
    stage_rows(sh.tile(buffer), kb, j0, keys);
    stage_rows(sh.tile(buffer + 1), vb, j0, keys);
  };
  stage_rows(sh.tile(0), q + b * g.T * kD, first, g.T);
  cp_async_commit();
  stage_kv(1, 0);
  cp_async_commit();
  cp_async_wait<1>();  // Q (K0 and V0 may still be in flight)
  __syncthreads();
  QueryFragments<M, kD> fq{sh.tile(0).rows_from(warp * kRows), {}};
  fq.load(lane);
  float o[kD / 8][4] = {}, m[2] = {neg_inf(), neg_inf()}, l[2] = {0.f, 0.f};
  for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
    const int kv = next_pair(1, int(j0 / kTile % 2), [&](int at) {
      if (j0 + kTile < keys) stage_kv(at, j0 + kTile);
    });
    float s[kTileN][4];
    fq.scores(s, sh.tile(kv), lane);
    softmax_tile<kD>(s, m, l, o, g, row0, j0, lane);
    accumulate_product<M, kD>(o, s, sh.scratch(warp), sh.tile(kv + 1), lane);
  }
  float inv[2];
  for (int h = 0; h < 2; ++h) l[h] = quad_sum(l[h]), inv[h] = 1.f / l[h];
  write_rows<kD>(out + b * g.T * kD, o, row0, g.T, inv, lane);
  for (int h = 0; h < 2 && lane % 4 == 0; ++h) {
    const int64_t row = row0 + lane / 4 + 8 * h;
    if (row < g.T) lse[b * g.T + row] = m[h] + logf(l[h]);
  }
}

// P (or P^T) of a tile from the scores: exp(scale s - lse) where the query sees the key, else
// 0; lse of the rows (lse_of(r), by accumulator element) and the mask (seen(nt, r)).
template <typename Lse, typename Seen>
__device__ inline void probabilities(float (&s)[kTileN][4], const Geometry& g, Lse lse_of,
                                     Seen seen) {
  for (int nt = 0; nt < kTileN; ++nt)
    for (int r = 0; r < 4; ++r)
      s[nt][r] = seen(nt, r) ? expf(s[nt][r] * g.scale - lse_of(nt, r)) : 0.f;
}

// D_i = dout_i . out_i of the lane's two rows (h = 0, 1), split over the row's quad.
template <int kD, typename T>
__device__ inline float delta_of(const T* dout, const T* out, int64_t row, int64_t rows, int lane) {
  float sum = 0.f;
  for (int d = lane % 4; row < rows && d < kD; d += 4)
    sum += convert<float>(dout[row * kD + d]) * convert<float>(out[row * kD + d]);
  return quad_sum(sum);
}

template <typename M, int kD, typename T>
__global__ void dq_kernel(T* dq, float* delta, const T* dout, const T* q, const T* k, const T* v,
                          const T* out, const float* lse, Geometry g) {
  RG_DYNAMIC_SHARED(T, raw);
  const SharedTiles<M, kD> sh{raw, 6};
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t b = blockIdx.x / blocks_per_batch(g.T), base = b * g.T;
  const int64_t first = blockIdx.x % blocks_per_batch(g.T) * kTile, row0 = first + warp * kRows;
  const T *kb = k + b * g.S * kD, *vb = v + b * g.S * kD;
  const int64_t keys = keys_for(g, first);
  auto stage_kv = [&](int buffer, int64_t j0) {
    stage_rows(sh.tile(buffer), kb, j0, keys);
    stage_rows(sh.tile(buffer + 1), vb, j0, keys);
  };
  stage_rows(sh.tile(0), q + base * kD, first, g.T);
  stage_rows(sh.tile(1), dout + base * kD, first, g.T);
  stage_kv(2, 0);
  float li[2] = {}, di[2] = {};
  for (int h = 0; h < 2; ++h) {
    const int64_t row = row0 + lane / 4 + 8 * h;
    di[h] = delta_of<kD>(dout + base * kD, out + base * kD, row, g.T, lane);
    li[h] = row < g.T ? lse[base + row] : 0.f;
    if (row < g.T && lane % 4 == 0) delta[base + row] = di[h];
  }
  float acc[kD / 8][4] = {};
  for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
    const int kv = next_pair(2, int(j0 / kTile % 2), [&](int at) {
      if (j0 + kTile < keys) stage_kv(at, j0 + kTile);
    });
    float p[kTileN][4], dp[kTileN][4];
    scores<M, kD>(p, sh.tile(0).rows_from(warp * kRows), sh.tile(kv), lane);
    probabilities(
        p, g, [&](int, int r) { return li[r / 2]; },
        [&](int nt, int r) {
          return sees(g, row0 + c_row(lane, r), j0 + nt * 8 + c_col(lane, r));
        });
    scores<M, kD>(dp, sh.tile(1).rows_from(warp * kRows), sh.tile(kv + 1), lane);
    for (int nt = 0; nt < kTileN; ++nt)
      for (int r = 0; r < 4; ++r) dp[nt][r] = p[nt][r] * (dp[nt][r] - di[r / 2]);
    accumulate_product<M, kD>(acc, dp, sh.scratch(warp), sh.tile(kv), lane);
  }
  const float scale[2] = {g.scale, g.scale};
  write_rows<kD>(dq + base * kD, acc, row0, g.T, scale, lane);
}

template <typename M, int kD, typename T>
__global__ void dkdv_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                            const float* lse, const float* delta, Geometry g) {
  RG_DYNAMIC_SHARED(T, raw);
  const SharedTiles<M, kD> sh{raw, 6};
  float* lse_s = sh.floats();
  float* delta_s = lse_s + kTile;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int64_t b = blockIdx.x / blocks_per_batch(g.S), base = b * g.T;
  const int64_t first = blockIdx.x % blocks_per_batch(g.S) * kTile, key0 = first + warp * kRows;
  const T *qb = q + base * kD, *dob = dout + base * kD;
  auto stage_qdo = [&](int buffer, int64_t i0) {
    stage_rows(sh.tile(buffer), qb, i0, g.T);
    stage_rows(sh.tile(buffer + 1), dob, i0, g.T);
  };
  stage_rows(sh.tile(0), k + b * g.S * kD, first, g.S);
  stage_rows(sh.tile(1), v + b * g.S * kD, first, g.S);
  const int64_t begin = g.causal ? first : 0;
  if (begin < g.T) stage_qdo(2, begin);
  float acc_k[kD / 8][4] = {}, acc_v[kD / 8][4] = {};
  for (int64_t i0 = begin; i0 < g.T; i0 += kTile) {
    const int qdo = next_pair(2, int((i0 - begin) / kTile % 2), [&](int at) {
      if (i0 + kTile < g.T) stage_qdo(at, i0 + kTile);
      for (int t = int(threadIdx.x); t < kTile; t += int(blockDim.x)) {  // this step's
        lse_s[t] = i0 + t < g.T ? lse[base + i0 + t] : 0.f;
        delta_s[t] = i0 + t < g.T ? delta[base + i0 + t] : 0.f;
      }
    });
    float p[kTileN][4], dp[kTileN][4];  // transposed: rows are keys, columns queries
    auto column = [&](int nt, int r) { return nt * 8 + c_col(lane, r); };
    scores<M, kD>(p, sh.tile(0).rows_from(warp * kRows), sh.tile(qdo), lane);
    probabilities(
        p, g, [&](int nt, int r) { return lse_s[column(nt, r)]; },
        [&](int nt, int r) { return sees(g, i0 + column(nt, r), key0 + c_row(lane, r)); });
    if constexpr (std::is_same_v<M, MmaTf32>) {
      // P waits in the scratch tile while dV += P^T dO runs and dP^T's scores come: neither
      // P nor dP^T in registers beside the two accumulators (D 128 fits without spills)
      __syncwarp();  // the scratch tile's last reads are done
      store_scratch(sh.scratch(warp), p, lane);
      __syncwarp();
      accumulate_scratch<M, kD>(acc_v, sh.scratch(warp), sh.tile(qdo + 1), lane);
      scores<M, kD>(dp, sh.tile(1).rows_from(warp * kRows), sh.tile(qdo + 1), lane);
      for (int nt = 0; nt < kTileN; ++nt)
        for (int r = 0; r < 4; ++r)
          dp[nt][r] =
              scratch_value(sh.scratch(warp), nt, r, lane) * (dp[nt][r] - delta_s[column(nt, r)]);
    } else {
      scores<M, kD>(dp, sh.tile(1).rows_from(warp * kRows), sh.tile(qdo + 1), lane);
      for (int nt = 0; nt < kTileN; ++nt)
        for (int r = 0; r < 4; ++r) dp[nt][r] = p[nt][r] * (dp[nt][r] - delta_s[column(nt, r)]);
      accumulate_product<M, kD>(acc_v, p, sh.scratch(warp), sh.tile(qdo + 1), lane);
    }
    accumulate_product<M, kD>(acc_k, dp, sh.scratch(warp), sh.tile(qdo), lane);
  }
  const float scale[2] = {g.scale, g.scale}, one[2] = {1.f, 1.f};
  write_rows<kD>(dk + b * g.S * kD, acc_k, key0, g.S, scale, lane);
  write_rows<kD>(dv + b * g.S * kD, acc_v, key0, g.S, one, lane);
}

// ---- host side

// Shared memory of a kernel staging `tiles` 64-row tiles plus the warps' scratch tiles
// where used (and `floats` f32 values).
template <typename M, int kD>
size_t shared_bytes(int tiles, int floats) {
  return size_t(tiles * Tile<typename M::In, kD>::kValues + scratch_values<M>()) *
             sizeof(typename M::In) +
         size_t(floats) * sizeof(float);
}

template <typename M, int kD>
LaunchConfig config_for(const char* name, const Tensor& t, int64_t batches, int64_t rows, int tiles,
                        int floats) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(t);
  cfg.grid = dim3(static_cast<unsigned>(batches * ceil_div(rows, kTile)));
  cfg.block = dim3(32 * kWarps);
  cfg.shared_bytes = shared_bytes<M, kD>(tiles, floats);
  cfg.opt_in_shared = true;
  return cfg;
}

// Runs `body` with the mma shape, storage type and head size of these tensors; false (and
// nothing run) where this path does not apply: f64, f32 without TF32, heads other than
// D == Dv in {64, 128}, no keys, or a staged tensor (q, k, v, `also`) not 16-byte aligned
// (cp.async copies 16 bytes: a view at an odd offset).
template <typename F>
bool with_mma_types(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& also, F body) {
  const int64_t D = q.size(2);
  if (v.size(2) != D || (D != 64 && D != 128) || k.size(1) == 0) return false;
  for (const Tensor* t : {&q, &k, &v, &also})
    if (reinterpret_cast<uintptr_t>(t->data_ptr()) % 16) return false;
  auto heads = [&]<typename M, typename T>() {
    if (D == 64)
      body.template operator()<M, T, 64>();
    else
      body.template operator()<M, T, 128>();
    return true;
  };
  if (q.dtype() == DType::bf16) return heads.template operator()<MmaBf16, bf16>();
  if (q.dtype() == DType::f32 && gpu::allow_tf32())
    return heads.template operator()<MmaTf32, float>();
  return false;
}

inline Geometry geometry_of(const Tensor& q, const Tensor& k, bool causal, double scale) {
  return {q.size(0), q.size(1), k.size(1), causal, float(scale)};
}

}  // namespace attention_mma

// The tensor-core forward where it applies (see with_mma_types); false otherwise.
inline bool run_attention_mma(const Tensor& out, const Tensor& lse, const Tensor& q,
                              const Tensor& k, const Tensor& v, bool causal, double scale) {
  using namespace attention_mma;
  const Geometry g = geometry_of(q, k, causal, scale);
  return with_mma_types(q, k, v, q, [&]<typename M, typename T, int kD>() {
    if (g.B * g.T == 0) return;
    launch(forward_kernel<M, kD, T>, config_for<M, kD>("attention (mma)", out, g.B, g.T, 5, 0),
           static_cast<T*>(out.data_ptr()), static_cast<float*>(lse.data_ptr()),
           static_cast<const T*>(q.data_ptr()), static_cast<const T*>(k.data_ptr()),
           static_cast<const T*>(v.data_ptr()), g);
  });
}

inline bool run_attention_backward_mma(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                       const Tensor& dout, const Tensor& q, const Tensor& k,
                                       const Tensor& v, const Tensor& out, const Tensor& lse,
                                       bool causal, double scale) {
  using namespace attention_mma;
  const Geometry g = geometry_of(q, k, causal, scale);
  return with_mma_types(q, k, v, dout, [&]<typename M, typename T, int kD>() {
    Tensor delta = empty({g.B * g.T}, DType::f32, q.device());
    auto* qp = static_cast<const T*>(q.data_ptr());
    auto* kp = static_cast<const T*>(k.data_ptr());
    auto* vp = static_cast<const T*>(v.data_ptr());
    auto* dop = static_cast<const T*>(dout.data_ptr());
    auto* lp = static_cast<const float*>(lse.data_ptr());
    if (g.B * g.T > 0)
      launch(dq_kernel<M, kD, T>,
             config_for<M, kD>("attention_backward dq (mma)", dq, g.B, g.T, 6, 0),
             static_cast<T*>(dq.data_ptr()), static_cast<float*>(delta.data_ptr()), dop, qp, kp, vp,
             static_cast<const T*>(out.data_ptr()), lp, g);
    if (g.B == 0) return;
    launch(dkdv_kernel<M, kD, T>,
           config_for<M, kD>("attention_backward dkdv (mma)", dk, g.B, g.S, 6, 2 * kTile),
           static_cast<T*>(dk.data_ptr()), static_cast<T*>(dv.data_ptr()), dop, qp, kp, vp, lp,
           static_cast<const float*>(delta.data_ptr()), g);
  });
}

}  // namespace rg::RG_BACKEND
