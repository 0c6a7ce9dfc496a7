// softmax / log_softmax along `dim` and their backward; in/out contiguous, seen as
// [outer, D, inner]. Stable: an online max and sum of exp(x - max) (row_stats.cuh), so an all
// -inf row gives NaN like PyTorch. Sums in acc_t<T> (f32 for f32/bf16, f64 for f64).
//   forward:  y = exp(x - max) / sum           log: y = (x - max) - log(sum)
//   backward: dx = y * (dy - sum(dy * y))      log: dx = dy - exp(y) * sum(dy)
// Launch, inner == 1 (row_group.cuh): D <= 1024 one warp per row, 4 rows per block, the row
// in registers (1..32 per lane) and shuffle all-reductions, no barrier; longer rows one
// block per row, in registers up to 8192 f32 / 4096 f64 elements, then in opt-in dynamic
// shared memory (forward: 58k f32 / 29k f64 elements on an H200; backward: both dy and y,
// or dy alone when only one fits), re-read beyond that. Cached rows are read once and
// written once (the memory-bound minimum); the log-softmax backward with only dy cached
// still reads y once (its first pass needs only dy), the softmax backward reads y twice.
// inner > 1: one thread per (outer, inner) line looping over D (no sync): neighbouring
// threads read neighbouring lines, coalesced.
#include "kernels/contracts.h"
#include "kernels/cuda/row_group.cuh"
#include "kernels/cuda/row_stats.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T, int N, typename G>
__global__ void __launch_bounds__(G::kMaxThreads)
    softmax_rows_kernel(T* y, const T* x, int64_t rows, int64_t d, bool log) {
  using C = acc_t<T>;
  const int64_t row = G::row();
  if (row >= rows) return;  // whole warps of the last block (no barrier in the warp shape)
  const auto r = load_row<T, N, G>(x + row * d, 1, d);
  MaxSum<C> st = MaxSum<C>::identity();
  r.each([&](int64_t, C v) { st.add(v); });
  st = G::allreduce(st, MaxSumOp(), MaxSum<C>::identity()).finish();
  const C scale = log ? m_log(st.s) : C(1) / st.s;
  T* yr = y + row * d;
  r.each([&](int64_t i, C v) {
    C shifted = v - st.m;
    yr[i] = convert<T>(log ? C(shifted - scale) : C(m_exp(shifted) * scale));
  });
}

template <typename T>
__global__ void softmax_lines_kernel(T* y, const T* x, int64_t outer, int64_t d, int64_t inner,
                                     bool log) {
  using C = acc_t<T>;
  int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= outer * inner) return;
  int64_t base = (line / inner) * d * inner + line % inner;
  MaxSum<C> st = MaxSum<C>::identity();
  for (int64_t i = 0; i < d; ++i) st.add(convert<C>(x[base + i * inner]));
  st = st.finish();
  const C scale = log ? m_log(st.s) : C(1) / st.s;
  for (int64_t i = 0; i < d; ++i) {
    C shifted = convert<C>(x[base + i * inner]) - st.m;
    y[base + i * inner] = convert<T>(log ? C(shifted - scale) : C(m_exp(shifted) * scale));
  }
}

template <typename T>
RG_HD inline acc_t<T> backward_term(acc_t<T> dy, acc_t<T> y, bool log) {
  return log ? dy : dy * y;
}
template <typename T>
RG_HD inline T backward_value(acc_t<T> dy, acc_t<T> y, acc_t<T> dot, bool log) {
  using C = acc_t<T>;
  return convert<T>(log ? C(dy - m_exp(y) * dot) : C(y * (dy - dot)));
}

template <typename T, int N, typename G>
__global__ void __launch_bounds__(G::kMaxThreads)
    softmax_backward_rows_kernel(T* dx, const T* dy, const T* y, int64_t rows, int64_t d,
                                 bool log) {
  using C = acc_t<T>;
  const int64_t row = G::row();
  if (row >= rows) return;
  const auto g = load_row<T, first_row_slots<N>, G>(dy + row * d, 1, d);
  const auto o = load_row<T, other_row_slots<N>, G>(y + row * d, 1, d, 1);
  C dot = 0;
  g.each_index([&](int k, int64_t i) { dot += log ? g.at(k, i) : g.at(k, i) * o.at(k, i); });
  dot = G::allreduce(dot, SumOp(), C(0));
  T* dxr = dx + row * d;
  g.each_index(
      [&](int k, int64_t i) { dxr[i] = backward_value<T>(g.at(k, i), o.at(k, i), dot, log); });
}

template <typename T>
__global__ void softmax_backward_lines_kernel(T* dx, const T* dy, const T* y, int64_t outer,
                                              int64_t d, int64_t inner, bool log) {
  int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= outer * inner) return;
  int64_t base = (line / inner) * d * inner + line % inner;
  using C = acc_t<T>;
  C dot = 0;
  for (int64_t i = 0; i < d; ++i)
    dot += backward_term<T>(convert<C>(dy[base + i * inner]), convert<C>(y[base + i * inner]), log);
  for (int64_t i = 0; i < d; ++i) {
    int64_t at = base + i * inner;
    dx[at] = backward_value<T>(convert<C>(dy[at]), convert<C>(y[at]), dot, log);
  }
}

// Rows (inner == 1): row_shape (row_group.cuh); lines: 128 threads, a thread per line, no sync.
LaunchConfig config_for(const char* name, const SoftmaxGeometry& g, const Tensor& t,
                        const RowShape& rs) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(t);
  if (g.inner == 1) {
    set_row_launch(cfg, rs, g.outer);
  } else {
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(g.outer * g.inner, 128)));
    cfg.block = dim3(128);
    cfg.uses_sync = false;
  }
  return cfg;
}

void run_softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  RG_KERNEL_CONTRACT(check_softmax(out, in, dim, log));
  const SoftmaxGeometry g = softmax_geometry(in, dim);
  if (in.numel() == 0) return;
  dispatch_dtype<DTypes::floating, bf16>(in.dtype(), op, [&]<typename T>(TypeTag<T>) {
    auto* y = static_cast<T*>(out.data_ptr());
    auto* x = static_cast<const T*>(in.data_ptr());
    const RowShape rs = row_shape(g.dim, sizeof(acc_t<T>), sizeof(T));
    LaunchConfig cfg = config_for(op, g, out, rs);
    if (g.inner == 1)
      dispatch_row_shape<acc_t<T>>(rs, [&]<int N, typename G>(Slots<N>, TypeTag<G>) {
        launch(softmax_rows_kernel<T, N, G>, cfg, y, x, g.outer, g.dim, log);
      });
    else
      launch(softmax_lines_kernel<T>, cfg, y, x, g.outer, g.dim, g.inner, log);
  });
}

void run_softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y,
                          int64_t dim, bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  RG_KERNEL_CONTRACT(check_softmax_backward(grad_in, grad_out, y, dim, log));
  const SoftmaxGeometry g = softmax_geometry(y, dim);
  if (y.numel() == 0) return;
  dispatch_dtype<DTypes::floating, bf16>(y.dtype(), op, [&]<typename T>(TypeTag<T>) {
    auto* dx = static_cast<T*>(grad_in.data_ptr());
    auto* dy = static_cast<const T*>(grad_out.data_ptr());
    auto* yy = static_cast<const T*>(y.data_ptr());
    const RowShape rs = row_shape(g.dim, sizeof(acc_t<T>), sizeof(T), 2);
    LaunchConfig cfg = config_for(op, g, y, rs);
    if (g.inner == 1)
      dispatch_row_shape<acc_t<T>, 2>(rs, [&]<int N, typename G>(Slots<N>, TypeTag<G>) {
        launch(softmax_backward_rows_kernel<T, N, G>, cfg, dx, dy, yy, g.outer, g.dim, log);
      });
    else
      launch(softmax_backward_lines_kernel<T>, cfg, dx, dy, yy, g.outer, g.dim, g.inner, log);
  });
}

}  // namespace

void register_softmax_kernels(KernelTable& k) {
  k.softmax = run_softmax;
  k.softmax_backward = run_softmax_backward;
}
}  // namespace rg::RG_BACKEND
