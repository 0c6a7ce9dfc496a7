// layernorm over the last dim: x contiguous seen as [N, C]; mean/rstd [N] contiguous, f32
// (f64 for f64 x); weight/bias [C] optional (undefined: no affine).
//   forward:  mean, var (biased), rstd = 1/sqrt(var + eps), out = (x - mean) * rstd * w + b
//   backward: g = dy * weight; dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
//             dweight = sum_n dy * xhat, dbias = sum_n dy, written with `=`.
// Forward and dx launch (row_group.cuh): C <= 1024 one warp per row, 4 rows per block, the
// row in registers and shuffle all-reductions; longer rows one block per row, in registers
// up to 8192 f32 / 4096 f64 elements, then in opt-in dynamic shared memory (x; dx: dy and
// x, or dy alone when only one fits), re-read beyond. Sums in acc_t<T> (f32 for f32/bf16).
// Mean and variance (row_stats.cuh): a cached row takes two passes over its cache (mean, then
// squared deviations); a row too long to cache is Welford, one pass that merges across lanes,
// so it is read twice, not three times. Both stay stable in f32 (no E[x^2] - E[x]^2). Cached
// rows read x (and dy) once, write once.
// dweight/dbias: two passes. The rows are split into chunks over blockIdx.y (enough threads
// to fill an H200 even for 768 columns); a thread sums its column over its chunk's rows into
// double partials [chunks, C] (a warp reads 32 neighbouring columns: coalesced), and a
// second kernel adds each column's chunks in order. The split depends on the shape only:
// deterministic.
#include "kernels/contracts.h"
#include "kernels/cuda/row_group.cuh"
#include "kernels/cuda/row_stats.cuh"

namespace rg::RG_BACKEND {
namespace {

// 24 slots of a 4-byte type: ptxas gives 89 registers unbounded (more than 32 slots' 80,
// which would cost occupancy); asked for 6 blocks per SM it fits 70 without spills.
template <typename T, typename S, int N, typename G>
__global__ void __launch_bounds__(G::kMaxThreads, N == 24 && sizeof(T) <= 4 ? 6 : 1)
    layernorm_kernel(T* out, S* mean, S* rstd, const T* x, const T* weight, const T* bias,
                     int64_t rows, int64_t c, double eps) {
  using C = acc_t<T>;
  const int64_t row = G::row();
  if (row >= rows) return;  // whole warps of the last block (no barrier in the warp shape)
  const auto r = load_row<T, N, G>(x + row * c, 1, c);
  C mu, m2;
  row_mean_m2<C>(r, c, G(), &mu, &m2);
  const C inv = C(1) / m_sqrt(m2 / C(c) + C(eps));
  if (G::tid() == 0) mean[row] = S(mu), rstd[row] = S(inv);
  T* orow = out + row * c;
  r.each([&](int64_t i, C v) {
    C o = (v - mu) * inv;
    if (weight) o = o * convert<C>(weight[i]);
    if (bias) o = o + convert<C>(bias[i]);
    orow[i] = convert<T>(o);
  });
}

template <typename T, typename S, int N, typename G>
__global__ void __launch_bounds__(G::kMaxThreads)
    layernorm_dx_kernel(T* dx, const T* dy, const T* x, const S* mean, const S* rstd,
                        const T* weight, int64_t rows, int64_t c) {
  using C = acc_t<T>;
  const int64_t row = G::row();
  if (row >= rows) return;
  const auto gr = load_row<T, first_row_slots<N>, G>(dy + row * c, 1, c);
  const auto xr = load_row<T, other_row_slots<N>, G>(x + row * c, 1, c, 1);
  const C m = C(mean[row]), s = C(rstd[row]);
  auto g_at = [&](int k, int64_t i) {
    return weight ? gr.at(k, i) * convert<C>(weight[i]) : gr.at(k, i);
  };
  C g_sum = 0, gx_sum = 0;
  gr.each_index([&](int k, int64_t i) {
    C g = g_at(k, i);
    g_sum += g;
    gx_sum += g * ((xr.at(k, i) - m) * s);
  });
  const C g_mean = G::allreduce(g_sum, SumOp(), C(0)) / C(c);
  const C gx_mean = G::allreduce(gx_sum, SumOp(), C(0)) / C(c);
  T* dxr = dx + row * c;
  gr.each_index([&](int k, int64_t i) {
    C xhat = (xr.at(k, i) - m) * s;
    dxr[i] = convert<T>(C(s * (g_at(k, i) - g_mean - xhat * gx_mean)));
  });
}

// Pass 1: partial_w/partial_b[chunk][j] = sums over rows [chunk * rows_per_chunk, +rows).
template <typename T, typename S>
__global__ void layernorm_dparams_chunks_kernel(double* partial_w, double* partial_b, const T* dy,
                                                const T* x, const S* mean, const S* rstd, int64_t n,
                                                int64_t c, int64_t rows_per_chunk) {
  using C = acc_t<T>;
  int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= c) return;
  const int64_t begin = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < n ? begin + rows_per_chunk : n;
  double acc_w = 0, acc_b = 0;
  for (int64_t r = begin; r < end; ++r) {
    C g = convert<C>(dy[r * c + j]);
    acc_w += double(g * ((convert<C>(x[r * c + j]) - C(mean[r])) * C(rstd[r])));
    acc_b += double(g);
  }
  partial_w[int64_t(blockIdx.y) * c + j] = acc_w;
  partial_b[int64_t(blockIdx.y) * c + j] = acc_b;
}

// Pass 2: each column adds its chunks in order.
template <typename T>
__global__ void layernorm_dparams_combine_kernel(T* dweight, T* dbias, const double* partial_w,
                                                 const double* partial_b, int64_t chunks,
                                                 int64_t c) {
  using C = acc_t<T>;
  int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= c) return;
  double acc_w = 0, acc_b = 0;
  for (int64_t k = 0; k < chunks; ++k) acc_w += partial_w[k * c + j], acc_b += partial_b[k * c + j];
  if (dweight) dweight[j] = convert<T>(C(acc_w));
  if (dbias) dbias[j] = convert<T>(C(acc_b));
}

template <typename T>
T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr;
}

LaunchConfig row_config(const char* name, int64_t rows, const RowShape& shape, const Tensor& t) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.stream = stream_for(t);
  set_row_launch(cfg, shape, rows);
  return cfg;
}

// Rows per thread in the parameter-gradient passes: enough threads for an H200 (132 SMs x
// 2048), each summing at least 32 rows.
int64_t dparams_chunks(int64_t n, int64_t c) {
  const int64_t chunks = std::min(ceil_div(int64_t(1) << 18, c), n / 32);
  return std::max<int64_t>(1, std::min<int64_t>(chunks, 65535));
}

template <typename T, typename S>
void launch_dparams(const Tensor& dw, const Tensor& db, const Tensor& g, const Tensor& x,
                    const Tensor& mean, const Tensor& rstd, int64_t n, int64_t c) {
  const int64_t rows_per_chunk = std::max<int64_t>(1, ceil_div(n, dparams_chunks(n, c)));
  const int64_t chunks = std::max<int64_t>(1, ceil_div(n, rows_per_chunk));
  Tensor partials = empty({2, chunks, c}, DType::f64, x.device());
  auto* partial_w = static_cast<double*>(partials.data_ptr());
  LaunchConfig cfg;
  cfg.name = "layernorm_backward_params";
  cfg.stream = stream_for(x);
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(c, 128)), static_cast<unsigned>(chunks));
  cfg.block = dim3(128);
  cfg.uses_sync = false;
  launch(layernorm_dparams_chunks_kernel<T, S>, cfg, partial_w, partial_w + chunks * c,
         ptr_or_null<const T>(g), ptr_or_null<const T>(x), ptr_or_null<const S>(mean),
         ptr_or_null<const S>(rstd), n, c, rows_per_chunk);
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(c, 128)));
  launch(layernorm_dparams_combine_kernel<T>, cfg, ptr_or_null<T>(dw), ptr_or_null<T>(db),
         static_cast<const double*>(partial_w), static_cast<const double*>(partial_w + chunks * c),
         chunks, c);
}

template <typename T, typename S>
void launch_dx(const Tensor& dx, const Tensor& g, const Tensor& x, const Tensor& mean,
               const Tensor& rstd, const Tensor& w, int64_t n, int64_t c) {
  const RowShape rs = row_shape(c, sizeof(acc_t<T>), sizeof(T), 2);
  dispatch_row_shape<acc_t<T>, 2>(rs, [&]<int N, typename G>(Slots<N>, TypeTag<G>) {
    launch(layernorm_dx_kernel<T, S, N, G>, row_config("layernorm_backward", n, rs, x),
           ptr_or_null<T>(dx), ptr_or_null<const T>(g), ptr_or_null<const T>(x),
           ptr_or_null<const S>(mean), ptr_or_null<const S>(rstd), ptr_or_null<const T>(w), n, c);
  });
}

void run_layernorm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                   const Tensor& weight, const Tensor& bias, double eps) {
  RG_KERNEL_CONTRACT(check_layernorm(out, mean, rstd, x));
  int64_t c = x.dim() == 0 ? 1 : x.size(-1), n = c == 0 ? 0 : x.numel() / c;
  if (n == 0) return;
  Tensor w = contiguous_as(weight, x.dtype()), b = contiguous_as(bias, x.dtype());
  dispatch_dtype<DTypes::floating, bf16>(x.dtype(), "layernorm", [&]<typename T>(TypeTag<T>) {
    using S = layernorm_stats_t<T>;
    const RowShape rs = row_shape(c, sizeof(acc_t<T>), sizeof(T));
    dispatch_row_shape<acc_t<T>>(rs, [&]<int N, typename G>(Slots<N>, TypeTag<G>) {
      launch(layernorm_kernel<T, S, N, G>, row_config("layernorm", n, rs, x), ptr_or_null<T>(out),
             ptr_or_null<S>(mean), ptr_or_null<S>(rstd), ptr_or_null<const T>(x),
             ptr_or_null<const T>(w), ptr_or_null<const T>(b), n, c, eps);
    });
  });
}

void run_layernorm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias,
                            const Tensor& dy, const Tensor& x, const Tensor& mean,
                            const Tensor& rstd, const Tensor& weight) {
  RG_KERNEL_CONTRACT(check_layernorm_backward(dx, x, mean, rstd));
  int64_t c = x.dim() == 0 ? 1 : x.size(-1), n = c == 0 ? 0 : x.numel() / c;
  Tensor g = contiguous_as(dy, x.dtype()), w = contiguous_as(weight, x.dtype());
  dispatch_dtype<DTypes::floating, bf16>(
      x.dtype(), "layernorm_backward", [&]<typename T>(TypeTag<T>) {
        using S = layernorm_stats_t<T>;
        if (dx.defined() && n > 0) launch_dx<T, S>(dx, g, x, mean, rstd, w, n, c);
        if (!dweight.defined() && !dbias.defined()) return;
        auto scratch_for = [&](const Tensor& t) {
          return !t.defined() || (t.is_contiguous() && t.dtype() == x.dtype())
                     ? t
                     : empty(t.shape(), x.dtype(), t.device());
        };
        Tensor dw = scratch_for(dweight), db = scratch_for(dbias);
        if (c > 0) launch_dparams<T, S>(dw, db, g, x, mean, rstd, n, c);
        if (dw.defined() && !dw.is_same(dweight)) kernel_table(RG_BACKEND_DEVICE).copy(dweight, dw);
        if (db.defined() && !db.is_same(dbias)) kernel_table(RG_BACKEND_DEVICE).copy(dbias, db);
      });
}

}  // namespace

void register_layernorm_kernels(KernelTable& k) {
  k.layernorm = run_layernorm;
  k.layernorm_backward = run_layernorm_backward;
}
}  // namespace rg::RG_BACKEND
