// CPU fused attention (the flash-attention recurrence, by tiles), forward and backward.
//   forward:  out_i = sum_j softmax_j(scale * q_i . k_j) v_j over the keys row i sees (all,
//             or j <= i when causal), lse_i = log sum_j exp(scale * q_i . k_j)
//   backward: p_ij = exp(scale * q_i . k_j - lse_i) recomputed from lse, never stored;
//             D_i = dout_i . out_i, ds_ij = p_ij (dout_i . v_j - D_i),
//             dq_i = scale sum_j ds_ij k_j, dk_j = scale sum_i ds_ij q_i, dv_j = sum_i p_ij dout_i
// Each (batch x head) slice is one task. Its queries go by tiles of kTile rows and its keys
// by tiles of kTile; a query tile keeps a running max m and sum l per row and rescales its
// output accumulator when the max grows (online softmax), so the T x S scores exist only one
// kTile x kTile tile at a time, and a causal tile entirely above the diagonal is skipped.
// f32 and bf16 compute in float (bf16 converted per slice): the tile products go to
// small_gemm_f32 (register tiles, nothing packed; K and V transposed once per slice so that
// every product reads its right operand by rows) where the tile widths suit it, else to Eigen;
// f64 computes in double with Eigen's products.
#include "kernels/cpu/capability.h"
#include "kernels/cpu/simd.h"  // before Eigen, which would read immintrin.h unguarded
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"      // inside Eigen 3.4's AVX bf16 code
#pragma GCC diagnostic ignored "-Wuninitialized"        // the same at -O1 (the sanitizer build)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on Eigen's AVX-512 packing
#include <Eigen/Core>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/eigen_threads.h"
#include "kernels/cpu/row_math.h"
#include "kernels/cpu/small_gemm_f32.h"
#include "kernels/cpu/transpose_f32.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kTile = 64;

template <typename C>
using Matrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename C>
using Map = Eigen::Map<Matrix<C>>;

struct Geometry {
  int64_t T, S, D, Dv;
  bool causal;
  double scale;
  // Keys [0, key_end(i)) are visible to query row i.
  int64_t key_end(int64_t i) const { return causal ? std::min(i + 1, S) : S; }
};

// One slice's operands in the compute type C: the slice itself when T is C, else a copy.
template <typename T, typename C>
struct SliceOf {
  std::vector<C> copy;
  C* data;
  // read: the slice's values are needed (an input), not only its memory (an output).
  SliceOf(T* p, int64_t n, bool read = true) {
    if constexpr (std::is_same_v<T, C>) {
      data = p;
    } else {
      copy.resize(n);
      if (read)
        for (int64_t i = 0; i < n; ++i) copy[i] = C(float(p[i]));
      data = copy.data();
    }
  }
  // Writes the copy back to p (a no-op when the slice was used in place).
  void store(T* p) const {
    if constexpr (!std::is_same_v<T, C>)
      for (size_t i = 0; i < copy.size(); ++i) p[i] = T(copy[i]);
  }
};

// How many keys of the key tile [j0, j0 + bc) query row i sees.
int64_t visible_keys(const Geometry& g, int64_t i, int64_t j0, int64_t bc) {
  return std::clamp<int64_t>(g.key_end(i) - j0, 0, bc);
}

// row[c] = exp(row[c] - shift) for c < n, returning their sum. float: one SIMD pass
// (row_math.h: the vectorisable exp_f32, the sum in double lanes; glibc's expf was a call per
// score); double: a plain loop.
template <typename C>
C exp_shifted(C* row, int64_t n, C shift) {
  if constexpr (std::is_same_v<C, float>) {
    return static_cast<float>(row::exp_sum(row, row, n, shift));
  } else {
    C sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += row[c] = std::exp(row[c] - shift);
    return sum;
  }
}

// The largest of m and row[0..n).
template <typename C>
C row_max(const C* row, int64_t n, C m) {
  if constexpr (std::is_same_v<C, float>) return std::max(m, row::max(row, n));
  for (int64_t c = 0; c < n; ++c) m = std::max(m, row[c]);
  return m;
}

// One row of a score tile through the online softmax: the row's visible scores (n of bc)
// become exp(score - new max), the hidden ones 0; the running max m and sum l are updated.
// Returns the factor by which the row's output accumulator must be rescaled.
template <typename C>
C softmax_row(C* row, int64_t n, int64_t bc, C& m, C& l) {
  if (n == 0) {  // a later tile wholly above this row's diagonal
    std::fill(row, row + bc, C(0));
    return C(1);
  }
  // The exps run over the whole tile row (no scalar remainder after the last whole vector: a
  // third of a causal tile's exps), the hidden keys set to the shift first, so each adds
  // exactly 1 to the sum, then 0 to the row. (-inf instead, whose exp is 0, made every hidden
  // key an underflow, which is slow on x86.)
  const C mx = row_max(row, n, m);
  std::fill(row + n, row + bc, mx);
  const C sum = exp_shifted(row, bc, mx) - C(bc - n);
  std::fill(row + n, row + bc, C(0));
  const C correction = m == -std::numeric_limits<C>::infinity() ? C(0) : std::exp(m - mx);
  l = l * correction + sum;
  m = mx;
  return correction;
}

// One row of the backward's tiles: p_row (scores) becomes p = exp(score - lse), 0 where
// hidden; ds_row (dout . v) becomes ds = p (dp - D).
template <typename C>
void probabilities_and_ds(C* p_row, C* ds_row, int64_t n, int64_t bc, C lse, C d) {
  std::fill(p_row + n, p_row + bc, lse);  // whole rows, as in softmax_row
  if constexpr (std::is_same_v<C, float>)
    row::exp_shift(p_row, p_row, bc, lse);
  else
    exp_shifted(p_row, bc, lse);
  std::fill(p_row + n, p_row + bc, C(0));
  for (int64_t c = 0; c < bc; ++c) ds_row[c] = p_row[c] * (ds_row[c] - d);
}

// One query tile of the forward: online softmax over the key tiles it sees (Eigen products).
template <typename C>
void forward_tile(const Geometry& g, const Map<C>& Q, const Map<C>& K, const Map<C>& V, Map<C>& O,
                  C* lse, int64_t i0, int64_t br) {
  Matrix<C> acc = Matrix<C>::Zero(br, g.Dv), s;
  std::vector<C> m(br, -std::numeric_limits<C>::infinity()), l(br, C(0));
  const int64_t keys = g.key_end(i0 + br - 1);
  for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
    const int64_t bc = std::min(kTile, keys - j0);
    s.noalias() = C(g.scale) * Q.middleRows(i0, br) * K.middleRows(j0, bc).transpose();
    for (int64_t r = 0; r < br; ++r)
      acc.row(r) *= softmax_row(s.row(r).data(), visible_keys(g, i0 + r, j0, bc), bc, m[r], l[r]);
    acc.noalias() += s * V.middleRows(j0, bc);
  }
  for (int64_t r = 0; r < br; ++r) {
    O.row(i0 + r) = acc.row(r) / l[r];
    lse[i0 + r] = m[r] + std::log(l[r]);
  }
}

// One query tile of the backward: recompute p from lse, then dv, dq and dk of the tile.
template <typename C>
void backward_tile(const Geometry& g, const Map<C>& Q, const Map<C>& K, const Map<C>& V,
                   const Map<C>& dO, const C* lse, const C* delta, Map<C>& dQ, Map<C>& dK,
                   Map<C>& dV, int64_t i0, int64_t br) {
  Matrix<C> p, dp;
  const int64_t keys = g.key_end(i0 + br - 1);
  for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
    const int64_t bc = std::min(kTile, keys - j0);
    p.noalias() = C(g.scale) * Q.middleRows(i0, br) * K.middleRows(j0, bc).transpose();
    dp.noalias() = dO.middleRows(i0, br) * V.middleRows(j0, bc).transpose();
    for (int64_t r = 0; r < br; ++r)
      probabilities_and_ds(p.row(r).data(), dp.row(r).data(), visible_keys(g, i0 + r, j0, bc), bc,
                           lse[i0 + r], delta[i0 + r]);
    dV.middleRows(j0, bc).noalias() += p.transpose() * dO.middleRows(i0, br);
    dQ.middleRows(i0, br).noalias() += C(g.scale) * dp * K.middleRows(j0, bc);
    dK.middleRows(j0, bc).noalias() += C(g.scale) * dp.transpose() * Q.middleRows(i0, br);
  }
}

// c (+)= alpha * op(a) @ b on float tiles, op(a)'s element (i, p) at a[i * a_row + p * a_col],
// b and c row-major: small_gemm_f32 where the width n suits it, else Eigen.
void tile_product(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_col,
                  const float* b, int64_t ldb, int64_t m, int64_t k, int64_t n, float alpha,
                  bool accumulate) {
  if (small_gemm_f32_fits(n))
    return small_gemm_f32(c, ldc, a, a_row, a_col, b, ldb, m, k, n, alpha, accumulate);
  using Strided = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  Eigen::Map<const Matrix<float>, 0, Strided> A(a, m, k, Strided(a_row, a_col));
  Eigen::Map<const Matrix<float>, 0, Strided> B(b, k, n, Strided(ldb, 1));
  Eigen::Map<Matrix<float>, 0, Strided> product(c, m, n, Strided(ldc, 1));
  if (accumulate)
    product.noalias() += alpha * A * B;
  else
    product.noalias() = alpha * A * B;
}

// One float slice's operands: q, k, v [T or S, D or Dv] row-major, and k^T [D, S] and v^T
// [Dv, S], so that q k^T and dout v^T read their right operands by rows.
struct FloatSlice {
  const float *q, *k, *v, *kt, *vt;
};

// A thread's buffers for the float tiles, kept across slices.
struct FloatScratch {
  std::vector<float> kt, vt, s, p, acc, m, l;
  // k^T and v^T of slice (k, v) into kt and vt.
  void transpose_keys(const Geometry& g, const float* k, const float* v) {
    kt.resize(g.D * g.S), vt.resize(g.Dv * g.S);
    transpose_f32(kt.data(), g.S, k, g.D, g.S, g.D);
    transpose_f32(vt.data(), g.S, v, g.Dv, g.S, g.Dv);
  }
};

// forward_tile with float tile products (tile_product) on raw rows.
void forward_tile_f32(const Geometry& g, const FloatSlice& x, float* O, float* lse, int64_t i0,
                      int64_t br, FloatScratch& w) {
  w.acc.assign(br * g.Dv, 0.f), w.s.resize(br * kTile);
  w.m.assign(br, -std::numeric_limits<float>::infinity()), w.l.assign(br, 0.f);
  float *acc = w.acc.data(), *s = w.s.data();
  const int64_t keys = g.key_end(i0 + br - 1);
  for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
    const int64_t bc = std::min(kTile, keys - j0);
    tile_product(s, bc, x.q + i0 * g.D, g.D, 1, x.kt + j0, g.S, br, g.D, bc, float(g.scale), false);
    for (int64_t r = 0; r < br; ++r) {
      const float correction =
          softmax_row(s + r * bc, visible_keys(g, i0 + r, j0, bc), bc, w.m[r], w.l[r]);
      for (int64_t c = 0; c < g.Dv; ++c) acc[r * g.Dv + c] *= correction;
    }
    tile_product(acc, g.Dv, s, bc, 1, x.v + j0 * g.Dv, g.Dv, br, bc, g.Dv, 1.f, true);
  }
  for (int64_t r = 0; r < br; ++r) {
    for (int64_t c = 0; c < g.Dv; ++c) O[(i0 + r) * g.Dv + c] = acc[r * g.Dv + c] / w.l[r];
    lse[i0 + r] = w.m[r] + std::log(w.l[r]);
  }
}

// The gradients of one float slice (row-major, zeroed by the caller).
struct FloatGrads {
  float *dq, *dk, *dv;
};

// backward_tile with float tile products (tile_product) on raw rows.
void backward_tile_f32(const Geometry& g, const FloatSlice& x, const float* dO, const float* lse,
                       const float* delta, const FloatGrads& d, int64_t i0, int64_t br,
                       FloatScratch& w) {
  w.p.resize(br * kTile), w.s.resize(br * kTile);
  float *p = w.p.data(), *ds = w.s.data();
  const float scale = float(g.scale);
  const int64_t keys = g.key_end(i0 + br - 1);
  for (int64_t j0 = 0; j0 < keys; j0 += kTile) {
    const int64_t bc = std::min(kTile, keys - j0);
    tile_product(p, bc, x.q + i0 * g.D, g.D, 1, x.kt + j0, g.S, br, g.D, bc, scale, false);
    tile_product(ds, bc, dO + i0 * g.Dv, g.Dv, 1, x.vt + j0, g.S, br, g.Dv, bc, 1.f, false);
    for (int64_t r = 0; r < br; ++r)
      probabilities_and_ds(p + r * bc, ds + r * bc, visible_keys(g, i0 + r, j0, bc), bc,
                           lse[i0 + r], delta[i0 + r]);
    // dv += p^T dout, dq += scale ds k, dk += scale ds^T q (p^T, ds^T: a_row 1, a_col bc)
    tile_product(d.dv + j0 * g.Dv, g.Dv, p, 1, bc, dO + i0 * g.Dv, g.Dv, bc, br, g.Dv, 1.f, true);
    tile_product(d.dq + i0 * g.D, g.D, ds, bc, 1, x.k + j0 * g.D, g.D, br, bc, g.D, scale, true);
    tile_product(d.dk + j0 * g.D, g.D, ds, 1, bc, x.q + i0 * g.D, g.D, bc, br, g.D, scale, true);
  }
}

template <typename T>
void attention_typed(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                     const Tensor& v, const Geometry& g) {
  using C = compute_t<T>;
  using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
  EigenSingleThread single;
  parallel_for(q.size(0), 1, [&](int64_t b0, int64_t b1) {
    EigenSingleThread scope;
    std::vector<C> lse_row(g.T);
    [[maybe_unused]] FloatScratch scratch;
    for (int64_t b = b0; b < b1; ++b) {
      SliceOf<T, C> qs(q.data<T>() + b * g.T * g.D, g.T * g.D);
      SliceOf<T, C> ks(k.data<T>() + b * g.S * g.D, g.S * g.D);
      SliceOf<T, C> vs(v.data<T>() + b * g.S * g.Dv, g.S * g.Dv);
      SliceOf<T, C> os(out.data<T>() + b * g.T * g.Dv, g.T * g.Dv, false);
      if constexpr (std::is_same_v<C, float>) {
        scratch.transpose_keys(g, ks.data, vs.data);
        const FloatSlice x{qs.data, ks.data, vs.data, scratch.kt.data(), scratch.vt.data()};
        for (int64_t i0 = 0; i0 < g.T; i0 += kTile)
          forward_tile_f32(g, x, os.data, lse_row.data(), i0, std::min(kTile, g.T - i0), scratch);
      } else {
        Map<C> Q(qs.data, g.T, g.D), K(ks.data, g.S, g.D), V(vs.data, g.S, g.Dv);
        Map<C> O(os.data, g.T, g.Dv);
        for (int64_t i0 = 0; i0 < g.T; i0 += kTile)
          forward_tile<C>(g, Q, K, V, O, lse_row.data(), i0, std::min(kTile, g.T - i0));
      }
      os.store(out.data<T>() + b * g.T * g.Dv);
      L* lse_out = lse.data<L>() + b * g.T;
      for (int64_t i = 0; i < g.T; ++i) lse_out[i] = L(lse_row[i]);
    }
  });
}

template <typename T>
void attention_backward_typed(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Geometry& g) {
  using C = compute_t<T>;
  using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
  EigenSingleThread single;
  parallel_for(q.size(0), 1, [&](int64_t b0, int64_t b1) {
    EigenSingleThread scope;
    std::vector<C> lse_row(g.T), delta(g.T);
    [[maybe_unused]] FloatScratch scratch;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t qo = b * g.T * g.D, ko = b * g.S * g.D, vo = b * g.S * g.Dv,
                    oo = b * g.T * g.Dv;
      SliceOf<T, C> qs(q.data<T>() + qo, g.T * g.D), ks(k.data<T>() + ko, g.S * g.D);
      SliceOf<T, C> vs(v.data<T>() + vo, g.S * g.Dv), dos(dout.data<T>() + oo, g.T * g.Dv);
      SliceOf<T, C> os(out.data<T>() + oo, g.T * g.Dv);
      SliceOf<T, C> dqs(dq.data<T>() + qo, g.T * g.D, false);
      SliceOf<T, C> dks(dk.data<T>() + ko, g.S * g.D, false);
      SliceOf<T, C> dvs(dv.data<T>() + vo, g.S * g.Dv, false);
      Map<C> Q(qs.data, g.T, g.D), K(ks.data, g.S, g.D), V(vs.data, g.S, g.Dv);
      Map<C> dO(dos.data, g.T, g.Dv), O(os.data, g.T, g.Dv);
      Map<C> dQ(dqs.data, g.T, g.D), dK(dks.data, g.S, g.D), dV(dvs.data, g.S, g.Dv);
      dQ.setZero();
      dK.setZero();
      dV.setZero();
      const L* lse_in = lse.data<L>() + b * g.T;
      for (int64_t i = 0; i < g.T; ++i) {
        lse_row[i] = C(lse_in[i]);
        delta[i] = dO.row(i).dot(O.row(i));
      }
      if constexpr (std::is_same_v<C, float>) {
        scratch.transpose_keys(g, ks.data, vs.data);
        const FloatSlice x{qs.data, ks.data, vs.data, scratch.kt.data(), scratch.vt.data()};
        const FloatGrads d{dqs.data, dks.data, dvs.data};
        for (int64_t i0 = 0; i0 < g.T; i0 += kTile)
          backward_tile_f32(g, x, dos.data, lse_row.data(), delta.data(), d, i0,
                            std::min(kTile, g.T - i0), scratch);
      } else {
        for (int64_t i0 = 0; i0 < g.T; i0 += kTile)
          backward_tile<C>(g, Q, K, V, dO, lse_row.data(), delta.data(), dQ, dK, dV, i0,
                           std::min(kTile, g.T - i0));
      }
      dqs.store(dq.data<T>() + qo);
      dks.store(dk.data<T>() + ko);
      dvs.store(dv.data<T>() + vo);
    }
  });
}

Geometry geometry_of(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  RG_KERNEL_CONTRACT(check_attention("attention", q, k, v));
  return {q.size(1), k.size(1), q.size(2), v.size(2), causal, scale};
}

void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
               const Tensor& v, bool causal, double scale) {
  const Geometry g = geometry_of(q, k, v, causal, scale);
  dispatch_dtype<DTypes::floating>(q.dtype(), "attention", [&]<typename T>(TypeTag<T>) {
    attention_typed<T>(out, lse, q, k, v, g);
  });
}

void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, bool causal, double scale) {
  const Geometry g = geometry_of(q, k, v, causal, scale);
  dispatch_dtype<DTypes::floating>(q.dtype(), "attention_backward", [&]<typename T>(TypeTag<T>) {
    attention_backward_typed<T>(dq, dk, dv, dout, q, k, v, out, lse, g);
  });
}

}  // namespace

void register_attention_kernels(KernelTable& k) {
  k.attention = attention;
  k.attention_backward = attention_backward;
}
}  // namespace rg::cpu::RG_CPU_CAP
