// CPU softmax / log_softmax and their backward along any dim of contiguous tensors.
// The tensor is seen as [outer, dim, inner]; inner == 1 walks contiguous rows, inner > 1
// walks blocks of kColumnBlock columns so the inner loop stays contiguous. Stable: the
// row max is subtracted before exp; sums accumulate in double. bf16 computes in float.
// f32 rows take SIMD passes (kernels/cpu/row_math.h: vectorised exp, lane-wise double sums).
//   softmax:      y = exp(x - max) / sum          log: y = x - max - log(sum)
//   backward:     dx = y * (dy - sum(dy * y))     log: dx = dy - exp(y) * sum(dy)
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/op_table.h"
#include "core/parallel.h"
#include "kernels/contracts.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/row_math.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kColumnBlock = 64;

// Calls body(x_offset, stride, width) for every [dim] line of `width` adjacent columns:
// element (i, j) of the line is at x_offset + i * stride + j. Parallel over lines.
template <typename F>
void for_each_line(const SoftmaxGeometry& g, F body) {
  int64_t blocks = (g.inner + kColumnBlock - 1) / kColumnBlock;
  int64_t per_task = g.dim * std::min(g.inner, kColumnBlock);
  parallel_for(g.outer * blocks, grain_rows(per_task), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t o = t / blocks, j0 = (t % blocks) * kColumnBlock;
      body(o * g.dim * g.inner + j0, g.inner, std::min(kColumnBlock, g.inner - j0));
    }
  });
}

// One f32 row in three SIMD passes: max, exp (kept in y) with its sum, scale. The exp pass
// prefetches next_row (the row computed next, or null).
void softmax_row_f32(float* y, const float* x, int64_t n, bool log, const float* next_row) {
  float mx = row::max(x, n);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0;  // all -inf: NaN, as in PyTorch
  if (log) {
    float log_sum = float(std::log(row::exp_sum(nullptr, x, n, mx, next_row)));
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mx) - log_sum;
  } else {
    float scale = float(1.0 / row::exp_sum(y, x, n, mx, next_row));
    for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  }
}

// Contiguous rows (inner == 1): the common case of the last dim.
template <typename T>
void softmax_rows(T* y, const T* x, const SoftmaxGeometry& g, bool log) {
  using C = compute_t<T>;
  const int64_t n = g.dim;
  parallel_for(g.outer, grain_rows(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      if constexpr (std::is_same_v<T, float>) {
        softmax_row_f32(yr, xr, n, log, r + 1 < e ? xr + n : nullptr);
        continue;
      }
      C mx = -std::numeric_limits<C>::infinity();
      for (int64_t i = 0; i < n; ++i) mx = std::max(mx, C(xr[i]));
      if (mx == -std::numeric_limits<C>::infinity()) mx = 0;  // all -inf: NaN, as in PyTorch
      double sum = 0;
      if (log || std::is_same_v<T, bf16_t>) {  // bf16 recomputes exp below: one rounding
        for (int64_t i = 0; i < n; ++i) sum += double(std::exp(C(xr[i]) - mx));
      } else {  // keep exp in y: one exp per element
        for (int64_t i = 0; i < n; ++i) {
          C e = std::exp(C(xr[i]) - mx);
          yr[i] = T(e);
          sum += double(e);
        }
      }
      if (log) {  // (x - max) - log(sum): rounding x - max first keeps small results exact
        C log_sum = C(std::log(sum));
        for (int64_t i = 0; i < n; ++i) yr[i] = T((C(xr[i]) - mx) - log_sum);
      } else {
        C scale = C(1.0 / sum);
        if constexpr (std::is_same_v<T, bf16_t>) {
          for (int64_t i = 0; i < n; ++i) yr[i] = T(std::exp(C(xr[i]) - mx) * scale);
        } else {
          for (int64_t i = 0; i < n; ++i) yr[i] = T(C(yr[i]) * scale);
        }
      }
    }
  });
}

template <typename T>
void softmax_typed(T* y, const T* x, const SoftmaxGeometry& g, bool log) {
  using C = compute_t<T>;
  if (g.inner == 1) return softmax_rows<T>(y, x, g, log);
  for_each_line(g, [&](int64_t off, int64_t s, int64_t w) {
    C mx[kColumnBlock];
    double sum[kColumnBlock];
    for (int64_t j = 0; j < w; ++j) mx[j] = -std::numeric_limits<C>::infinity(), sum[j] = 0;
    for (int64_t i = 0; i < g.dim; ++i)
      for (int64_t j = 0; j < w; ++j) mx[j] = std::max(mx[j], C(x[off + i * s + j]));
    for (int64_t j = 0; j < w; ++j)  // an all -inf line gives NaN, as in PyTorch
      if (mx[j] == -std::numeric_limits<C>::infinity()) mx[j] = 0;
    for (int64_t i = 0; i < g.dim; ++i)
      for (int64_t j = 0; j < w; ++j) {
        sum[j] += double(std::exp(C(x[off + i * s + j]) - mx[j]));
      }
    C scale[kColumnBlock];
    for (int64_t j = 0; j < w; ++j) scale[j] = log ? C(std::log(sum[j])) : C(1.0 / sum[j]);
    for (int64_t i = 0; i < g.dim; ++i)
      for (int64_t j = 0; j < w; ++j) {
        int64_t at = off + i * s + j;
        C shifted = C(x[at]) - mx[j];
        y[at] = log ? T(shifted - scale[j]) : T(std::exp(shifted) * scale[j]);
      }
  });
}

void softmax_backward_row_f32(float* dx, const float* dy, const float* y, int64_t n, bool log) {
  if (log) {
    float d = float(row::sum(dy, n));
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] - vec::exp_f32(y[i]) * d;
  } else {
    float d = float(row::dot(dy, y, n));
    for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - d);
  }
}

template <typename T>
void softmax_backward_rows(T* dx, const T* dy, const T* y, const SoftmaxGeometry& g, bool log) {
  using C = compute_t<T>;
  const int64_t n = g.dim;
  parallel_for(g.outer, grain_rows(n), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* dyr = dy + r * n;
      const T* yr = y + r * n;
      T* dxr = dx + r * n;
      if constexpr (std::is_same_v<T, float>) {
        softmax_backward_row_f32(dxr, dyr, yr, n, log);
        continue;
      }
      double dot = 0;
      for (int64_t i = 0; i < n; ++i)
        dot += log ? double(C(dyr[i])) : double(C(dyr[i])) * double(C(yr[i]));
      C d = C(dot);
      if (log) {
        for (int64_t i = 0; i < n; ++i) dxr[i] = T(C(dyr[i]) - std::exp(C(yr[i])) * d);
      } else {
        for (int64_t i = 0; i < n; ++i) dxr[i] = T(C(yr[i]) * (C(dyr[i]) - d));
      }
    }
  });
}

template <typename T>
void softmax_backward_typed(T* dx, const T* dy, const T* y, const SoftmaxGeometry& g, bool log) {
  using C = compute_t<T>;
  if (g.inner == 1) return softmax_backward_rows<T>(dx, dy, y, g, log);
  for_each_line(g, [&](int64_t off, int64_t s, int64_t w) {
    double dot[kColumnBlock];
    for (int64_t j = 0; j < w; ++j) dot[j] = 0;
    for (int64_t i = 0; i < g.dim; ++i)
      for (int64_t j = 0; j < w; ++j) {
        int64_t at = off + i * s + j;
        dot[j] += log ? double(C(dy[at])) : double(C(dy[at])) * double(C(y[at]));
      }
    for (int64_t i = 0; i < g.dim; ++i)
      for (int64_t j = 0; j < w; ++j) {
        int64_t at = off + i * s + j;
        C d = C(dot[j]);
        dx[at] = log ? T(C(dy[at]) - std::exp(C(y[at])) * d) : T(C(y[at]) * (C(dy[at]) - d));
      }
  });
}

void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  RG_KERNEL_CONTRACT(check_softmax(out, in, dim, log));
  const SoftmaxGeometry g = softmax_geometry(in, dim);
  if (in.numel() == 0) return;
  dispatch_dtype<DTypes::floating>(in.dtype(), op, [&]<typename T>(TypeTag<T>) {
    softmax_typed<T>(out.data<T>(), in.data<T>(), g, log);
  });
}

void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y, int64_t dim,
                      bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  RG_KERNEL_CONTRACT(check_softmax_backward(grad_in, grad_out, y, dim, log));
  const SoftmaxGeometry g = softmax_geometry(y, dim);
  if (y.numel() == 0) return;
  dispatch_dtype<DTypes::floating>(y.dtype(), op, [&]<typename T>(TypeTag<T>) {
    softmax_backward_typed<T>(grad_in.data<T>(), grad_out.data<T>(), y.data<T>(), g, log);
  });
}

}  // namespace

void register_softmax_kernels(KernelTable& k) {
  k.softmax = softmax;
  k.softmax_backward = softmax_backward;
}
}  // namespace rg::cpu::RG_CPU_CAP
