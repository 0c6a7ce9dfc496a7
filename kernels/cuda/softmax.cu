// softmax / log_softmax along `dim` and their backward; in/out contiguous, seen as
// [outer, D, inner]. Stable (row max subtracted; an all -inf row gives NaN like PyTorch),
// exp sums and dot products in double, bf16 computes in float -- as the cpu kernels.
//   forward:  y = exp(x - max) / sum           log: y = (x - max) - log(sum)
//   backward: dx = y * (dy - sum(dy * y))      log: dx = dy - exp(y) * sum(dy)
// Launch: inner == 1 -> one block (32..512 threads) per row, block all-reductions;
//         inner > 1  -> one thread per (outer, inner) line looping over D (no sync).
#include <limits>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T>
__global__ void softmax_rows_kernel(T* y, const T* x, int64_t d, bool log) {
  using C = acc_t<T>;
  __shared__ C scratch_c[32];
  __shared__ double scratch_d[32];
  const T* xr = x + int64_t(blockIdx.x) * d;
  T* yr = y + int64_t(blockIdx.x) * d;
  const C neg_inf = -std::numeric_limits<C>::infinity();
  C mx = neg_inf;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) mx = MaxOp()(mx, convert<C>(xr[i]));
  mx = block_allreduce(mx, MaxOp(), neg_inf, scratch_c);
  if (mx == neg_inf) mx = C(0);
  double sum = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    sum += double(m_exp(convert<C>(xr[i]) - mx));
  sum = block_allreduce(sum, SumOp(), 0.0, scratch_d);
  C scale = log ? C(::log(sum)) : C(1.0 / sum);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    C shifted = convert<C>(xr[i]) - mx;
    yr[i] = convert<T>(log ? C(shifted - scale) : C(m_exp(shifted) * scale));
  }
}

template <typename T>
__global__ void softmax_lines_kernel(T* y, const T* x, int64_t outer, int64_t d, int64_t inner,
                                     bool log) {
  using C = acc_t<T>;
  int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= outer * inner) return;
  int64_t base = (line / inner) * d * inner + line % inner;
  const C neg_inf = -std::numeric_limits<C>::infinity();
  C mx = neg_inf;
  for (int64_t i = 0; i < d; ++i) mx = MaxOp()(mx, convert<C>(x[base + i * inner]));
  if (mx == neg_inf) mx = C(0);
  double sum = 0;
  for (int64_t i = 0; i < d; ++i) sum += double(m_exp(convert<C>(x[base + i * inner]) - mx));
  C scale = log ? C(::log(sum)) : C(1.0 / sum);
  for (int64_t i = 0; i < d; ++i) {
    C shifted = convert<C>(x[base + i * inner]) - mx;
    y[base + i * inner] = convert<T>(log ? C(shifted - scale) : C(m_exp(shifted) * scale));
  }
}

template <typename T>
RG_HD inline double backward_term(T dy, T y, bool log) {
  using C = acc_t<T>;
  return log ? double(convert<C>(dy)) : double(convert<C>(dy)) * double(convert<C>(y));
}
template <typename T>
RG_HD inline T backward_value(T dy, T y, double dot, bool log) {
  using C = acc_t<T>;
  C d = C(dot), g = convert<C>(dy), v = convert<C>(y);
  return convert<T>(log ? C(g - m_exp(v) * d) : C(v * (g - d)));
}

template <typename T>
__global__ void softmax_backward_rows_kernel(T* dx, const T* dy, const T* y, int64_t d, bool log) {
  __shared__ double scratch[32];
  int64_t base = int64_t(blockIdx.x) * d;
  double dot = 0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    dot += backward_term(dy[base + i], y[base + i], log);
  dot = block_allreduce(dot, SumOp(), 0.0, scratch);
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    dx[base + i] = backward_value(dy[base + i], y[base + i], dot, log);
}

template <typename T>
__global__ void softmax_backward_lines_kernel(T* dx, const T* dy, const T* y, int64_t outer,
                                              int64_t d, int64_t inner, bool log) {
  int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= outer * inner) return;
  int64_t base = (line / inner) * d * inner + line % inner;
  double dot = 0;
  for (int64_t i = 0; i < d; ++i)
    dot += backward_term(dy[base + i * inner], y[base + i * inner], log);
  for (int64_t i = 0; i < d; ++i) {
    int64_t at = base + i * inner;
    dx[at] = backward_value(dy[at], y[at], dot, log);
  }
}

struct Geometry {
  int64_t outer = 1, d = 1, inner = 1;
};

Geometry geometry(const Tensor& t, int64_t dim, const char* op) {
  RG_DEBUG_ASSERT(dim >= 0 && dim < std::max<int64_t>(t.dim(), 1), op, ": dim ", dim,
                  " out of range for shape ", shape_str(t.shape()));
  Geometry g;
  for (int64_t i = 0; i < t.dim(); ++i) (i < dim ? g.outer : i == dim ? g.d : g.inner) *= t.size(i);
  return g;
}

// Row kernels: a power-of-two block of 32..512 threads; line kernels: 128 threads, no sync.
LaunchConfig config_for(const char* name, const Geometry& g, const Tensor& t) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(t);
  if (g.inner == 1) {
    int64_t threads = 32;
    while (threads < g.d && threads < 512) threads *= 2;
    cfg.grid = dim3(static_cast<unsigned>(g.outer));
    cfg.block = dim3(static_cast<unsigned>(threads));
  } else {
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(g.outer * g.inner, 128)));
    cfg.block = dim3(128);
    cfg.uses_sync = false;
  }
  return cfg;
}

void run_softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  RG_DEBUG_ASSERT(in.is_contiguous() && out.is_contiguous(), op,
                  ": kernel needs contiguous tensors");
  RG_DEBUG_ASSERT(in.shape() == out.shape() && in.dtype() == out.dtype(), op, ": output mismatch");
  Geometry g = geometry(in, dim, op);
  if (in.numel() == 0) return;
  dispatch_dtype<DTypes::floating, bf16>(in.dtype(), op, [&]<typename T>(TypeTag<T>) {
    auto* y = static_cast<T*>(out.data_ptr());
    auto* x = static_cast<const T*>(in.data_ptr());
    LaunchConfig cfg = config_for(op, g, out);
    if (g.inner == 1)
      launch(softmax_rows_kernel<T>, cfg, y, x, g.d, log);
    else
      launch(softmax_lines_kernel<T>, cfg, y, x, g.outer, g.d, g.inner, log);
  });
}

void run_softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y,
                          int64_t dim, bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  RG_DEBUG_ASSERT(grad_in.is_contiguous() && grad_out.is_contiguous() && y.is_contiguous(), op,
                  ": kernel needs contiguous tensors");
  RG_DEBUG_ASSERT(grad_in.shape() == y.shape() && grad_out.shape() == y.shape(), op,
                  ": shapes differ");
  Geometry g = geometry(y, dim, op);
  if (y.numel() == 0) return;
  dispatch_dtype<DTypes::floating, bf16>(y.dtype(), op, [&]<typename T>(TypeTag<T>) {
    auto* dx = static_cast<T*>(grad_in.data_ptr());
    auto* dy = static_cast<const T*>(grad_out.data_ptr());
    auto* yy = static_cast<const T*>(y.data_ptr());
    LaunchConfig cfg = config_for(op, g, y);
    if (g.inner == 1)
      launch(softmax_backward_rows_kernel<T>, cfg, dx, dy, yy, g.d, log);
    else
      launch(softmax_backward_lines_kernel<T>, cfg, dx, dy, yy, g.outer, g.d, g.inner, log);
  });
}

}  // namespace

void register_softmax_kernels(KernelTable& k) {
  k.softmax = run_softmax;
  k.softmax_backward = run_softmax_backward;
}
}  // namespace rg::RG_BACKEND
