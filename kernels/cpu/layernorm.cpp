// CPU layer normalisation over the last dim. x is contiguous, seen as [N, C]; mean and
// rstd are [N] (any shape with N elements), f32 for f32/bf16 x and f64 for f64 x.
//   forward:  xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps) (biased variance, two
//             passes in double), out = xhat * weight + bias (weight/bias undefined: skipped)
//   backward: g = dy * weight; dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
//             dweight = sum_n dy * xhat, dbias = sum_n dy, written with `=` (not +=);
//             they are reduced column-block-wise over rows in order, so the result does
//             not depend on the thread count.
// f32 rows sum with SIMD passes in double lanes (kernels/cpu/row_math.h); f64 stays sequential.
#include <cmath>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/row_math.h"
#include "kernels/cpu/tensor_utils.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kColumnBlock = 128;

template <typename T, typename S>
void layernorm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                     const Tensor& weight, const Tensor& bias, double eps) {
  using Cp = compute_t<T>;
  const int64_t c = x.dim() == 0 ? 1 : x.size(-1), n = c == 0 ? 0 : x.numel() / c;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  S* pm = mean.data<S>();
  S* pr = rstd.data<S>();
  Tensor w = weight.defined() ? contiguous_as(weight, x.dtype()) : Tensor();
  Tensor b = bias.defined() ? contiguous_as(bias, x.dtype()) : Tensor();
  const T* pw = w.defined() ? w.data<T>() : nullptr;
  const T* pb = b.defined() ? b.data<T>() : nullptr;
  parallel_for(n, grain_rows(c), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = px + r * c;
      T* orow = po + r * c;
      double sum = 0, sq = 0, mu;
      if constexpr (std::is_same_v<T, float>) {
        mu = row::sum(xr, c) / double(c);
        sq = row::centered_square_sum(xr, c, mu);
      } else {
        for (int64_t i = 0; i < c; ++i) sum += double(Cp(xr[i]));
        mu = sum / double(c);
        for (int64_t i = 0; i < c; ++i) {
          double d = double(Cp(xr[i])) - mu;
          sq += d * d;
        }
      }
      double inv = 1.0 / std::sqrt(sq / double(c) + eps);
      pm[r] = S(mu);
      pr[r] = S(inv);
      Cp m = Cp(mu), s = Cp(inv);
      for (int64_t i = 0; i < c; ++i) {
        Cp v = (Cp(xr[i]) - m) * s;
        if (pw) v = v * Cp(pw[i]);
        if (pb) v = v + Cp(pb[i]);
        orow[i] = T(v);
      }
    }
  });
}

template <typename T, typename S>
void layernorm_backward_typed(const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                              const Tensor& dy, const Tensor& x, const Tensor& mean,
                              const Tensor& rstd, const Tensor& weight) {
  using Cp = compute_t<T>;
  const int64_t c = x.dim() == 0 ? 1 : x.size(-1), n = c == 0 ? 0 : x.numel() / c;
  Tensor dyc = contiguous_as(dy, dy.dtype());
  const T* px = x.data<T>();
  const T* pdy = dyc.data<T>();
  const S* pm = mean.data<S>();
  const S* pr = rstd.data<S>();
  Tensor w = weight.defined() ? contiguous_as(weight, x.dtype()) : Tensor();
  const T* pw = w.defined() ? w.data<T>() : nullptr;
  if (dx.defined()) {
    T* pdx = dx.data<T>();
    parallel_for(n, grain_rows(c), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = px + r * c;
        const T* gr = pdy + r * c;
        Cp m = Cp(pm[r]), s = Cp(pr[r]);
        double g_sum = 0, gx_sum = 0;
        if constexpr (std::is_same_v<T, float>) {
          row::layernorm_grad_sums(gr, pw, xr, m, s, c, &g_sum, &gx_sum);
        } else {
          for (int64_t i = 0; i < c; ++i) {
            Cp g = pw ? Cp(gr[i]) * Cp(pw[i]) : Cp(gr[i]);
            g_sum += double(g);
            gx_sum += double(g * ((Cp(xr[i]) - m) * s));
          }
        }
        Cp g_mean = Cp(g_sum / double(c)), gx_mean = Cp(gx_sum / double(c));
        T* dr = pdx + r * c;
        for (int64_t i = 0; i < c; ++i) {
          Cp g = pw ? Cp(gr[i]) * Cp(pw[i]) : Cp(gr[i]);
          Cp xhat = (Cp(xr[i]) - m) * s;
          dr[i] = T(s * (g - g_mean - xhat * gx_mean));
        }
      }
    });
  }
  if (!dweight.defined() && !dbias.defined()) return;
  // Column sums over rows, in row order: deterministic for any thread count.
  Tensor dw = dweight.defined()
                  ? (dweight.is_contiguous() ? dweight : empty(dweight.shape(), dweight.dtype()))
                  : Tensor();
  Tensor db = dbias.defined()
                  ? (dbias.is_contiguous() ? dbias : empty(dbias.shape(), dbias.dtype()))
                  : Tensor();
  T* pdw = dw.defined() ? dw.data<T>() : nullptr;
  T* pdb = db.defined() ? db.data<T>() : nullptr;
  int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
  parallel_for(blocks, grain_rows(n * kColumnBlock), [&](int64_t begin, int64_t end) {
    double acc_w[kColumnBlock], acc_b[kColumnBlock];
    for (int64_t blk = begin; blk < end; ++blk) {
      int64_t j0 = blk * kColumnBlock, w = std::min(kColumnBlock, c - j0);
      for (int64_t j = 0; j < w; ++j) acc_w[j] = 0, acc_b[j] = 0;
      for (int64_t r = 0; r < n; ++r) {
        const T* xr = px + r * c + j0;
        const T* gr = pdy + r * c + j0;
        Cp m = Cp(pm[r]), s = Cp(pr[r]);
        for (int64_t j = 0; j < w; ++j) {
          acc_w[j] += double(Cp(gr[j]) * ((Cp(xr[j]) - m) * s));
          acc_b[j] += double(Cp(gr[j]));
        }
      }
      for (int64_t j = 0; j < w; ++j) {
        if (pdw) pdw[j0 + j] = T(Cp(acc_w[j]));
        if (pdb) pdb[j0 + j] = T(Cp(acc_b[j]));
      }
    }
  });
  if (dw.defined() && !dw.is_same(dweight)) copy_into(dweight, dw);
  if (db.defined() && !db.is_same(dbias)) copy_into(dbias, db);
}

void layernorm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
               const Tensor& weight, const Tensor& bias, double eps) {
  RG_KERNEL_CONTRACT(check_layernorm(out, mean, rstd, x));
  dispatch_dtype<DTypes::floating>(x.dtype(), "layernorm", [&]<typename T>(TypeTag<T>) {
    layernorm_typed<T, layernorm_stats_t<T>>(out, mean, rstd, x, weight, bias, eps);
  });
}

void layernorm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                        const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                        const Tensor& weight) {
  RG_KERNEL_CONTRACT(check_layernorm_backward(dx, x, mean, rstd));
  dispatch_dtype<DTypes::floating>(x.dtype(), "layernorm_backward", [&]<typename T>(TypeTag<T>) {
    layernorm_backward_typed<T, layernorm_stats_t<T>>(dx, dweight, dbias, dy, x, mean, rstd,
                                                      weight);
  });
}

}  // namespace

void register_layernorm_kernels(KernelTable& k) {
  k.layernorm = layernorm;
  k.layernorm_backward = layernorm_backward;
}
}  // namespace rg::cpu::RG_CPU_CAP
