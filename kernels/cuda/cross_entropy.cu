// Fused softmax + cross-entropy. logits [N, C] any strides; targets [N] int64/int32 (any
// strides, made contiguous int64); loss and dloss [N] (or 0-d when N == 1) in logits' dtype.
//   forward:  loss[n] = log(sum exp(x - max)) - (x[n, t] - max); 0 where t == ignore_index
//   backward: dlogits[n] = softmax(x[n]) * dloss[n], minus dloss[n] at t; 0 rows if ignored
// Max and sum of exp are one online pass (row_stats.cuh), sums in acc_t<T> (f32 for
// f32/bf16, f64 for f64). A target out of range is reported through a DeviceErrorSlot and
// thrown at the next host synchronization (device_errors.h).
// Launch (row_group.cuh): C <= 1024 one warp per row, 4 rows per block, shuffle reductions;
// longer rows one block per row. The forward keeps nothing (its single pass reads each logit
// once); the backward caches the row in registers (up to 8192 f32 / 4096 f64 classes per
// block), then in opt-in dynamic shared memory (up to 58k f32 / 29k f64 / 116k bf16
// classes on an H200: GPT-2's 50257), so it reads each logit once and writes each gradient
// once; longer rows read the logits twice.
#include "kernels/contracts.h"
#include "kernels/cuda/row_group.cuh"
#include "kernels/cuda/row_stats.cuh"

namespace rg::RG_BACKEND {
namespace {

struct RowArgs {
  int64_t c, s0, s1;  // classes and logits strides
  int64_t ignore_index;
  int64_t* error;  // DeviceErrorSlot
};

// The row's target, or -1 when ignored or out of range (then reported by thread 0).
template <typename G>
__device__ inline int64_t row_target(int64_t t, const RowArgs& a) {
  if (t == a.ignore_index) return -1;
  if (t < 0 || t >= a.c) {
    if (G::tid() == 0) record_device_error(a.error, t);
    return -1;
  }
  return t;
}

// The row's max and sum of exp(x - max), on every thread of the group.
template <typename C, typename Row, typename G>
__device__ inline MaxSum<C> row_stats(const Row& r, G) {
  MaxSum<C> st = MaxSum<C>::identity();
  r.each([&](int64_t, C v) { st.add(v); });
  return G::allreduce(st, MaxSumOp(), MaxSum<C>::identity()).finish();
}

// The forward needs no cache: one pass of online max and sum reads the row once.
template <typename T, typename G>
__global__ void __launch_bounds__(G::kMaxThreads)
    cross_entropy_kernel(T* loss, int64_t loss_stride, const T* logits, const int64_t* targets,
                         int64_t rows, RowArgs a) {
  using C = acc_t<T>;
  const int64_t row = G::row();
  if (row >= rows) return;
  const int64_t t = row_target<G>(targets[row], a);
  T* out = loss + row * loss_stride;
  if (t < 0) {  // the whole group leaves together: no barrier is left half-reached
    if (G::tid() == 0) *out = convert<T>(C(0));
    return;
  }
  const T* x = logits + row * a.s0;
  const MaxSum<C> st = row_stats<C>(load_row<T, 0, G>(x, a.s1, a.c), G());
  if (G::tid() == 0) *out = convert<T>(C(m_log(st.s) - (convert<C>(x[t * a.s1]) - st.m)));
}

template <typename T, int N, typename G>
__global__ void __launch_bounds__(G::kMaxThreads)
    cross_entropy_backward_kernel(T* dlogits, int64_t d0, int64_t d1, const T* logits,
                                  const int64_t* targets, const T* dloss, int64_t dloss_stride,
                                  int64_t rows, RowArgs a) {
  using C = acc_t<T>;
  const int64_t row = G::row();
  if (row >= rows) return;
  T* drow = dlogits + row * d0;
  const int64_t t = row_target<G>(targets[row], a);
  if (t < 0) {
    for (int64_t j = G::tid(); j < a.c; j += G::size()) drow[j * d1] = convert<T>(C(0));
    return;
  }
  const auto r = load_row<T, N, G>(logits + row * a.s0, a.s1, a.c);
  const MaxSum<C> st = row_stats<C>(r, G());
  const C log_sum = m_log(st.s), g = convert<C>(dloss[row * dloss_stride]);
  r.each([&](int64_t j, C v) {
    T p = convert<T>(C(m_exp((v - st.m) - log_sum) * g));
    drow[j * d1] = j == t ? convert<T>(C(convert<C>(p) - g)) : p;
  });
}

struct Prepared {
  Tensor targets;  // contiguous int64
  DeviceErrorSlot error;
  RowArgs args;
  LaunchConfig cfg;
  RowShape shape;
};

// cache: the kernel keeps the row (row_shape may put it in shared memory).
Prepared prepare(const char* op, const Tensor& logits, const Tensor& targets, int64_t ignore_index,
                 bool cache) {
  Prepared p{contiguous_as(targets, DType::i64),
             DeviceErrorSlot(logits.device(), str(op, ": target "),
                             str(" out of range for ", logits.size(1), " classes")),
             {},
             {},
             {}};
  p.args =
      RowArgs{logits.size(1), logits.stride(0), logits.stride(1), ignore_index, p.error.data()};
  p.shape = row_shape(logits.size(1), logits.dtype() == DType::f64 ? 8 : 4,
                      cache ? int(itemsize(logits.dtype())) : 0);
  set_row_launch(p.cfg, p.shape, logits.size(0));
  p.cfg.name = op;
  p.cfg.stream = stream_for(logits);
  return p;
}

void run_cross_entropy(const Tensor& loss, const Tensor& logits, const Tensor& targets,
                       int64_t ignore_index) {
  const char* op = "cross_entropy";
  RG_KERNEL_CONTRACT(check_cross_entropy(loss, logits, targets));
  if (logits.size(0) == 0) return;
  Prepared p = prepare(op, logits, targets, ignore_index, false);
  dispatch_dtype<DTypes::floating, bf16>(logits.dtype(), op, [&]<typename T>(TypeTag<T>) {
    auto run = [&](auto kernel) {
      launch(kernel, p.cfg, static_cast<T*>(loss.data_ptr()),
             loss.dim() == 0 ? int64_t(0) : loss.stride(0),
             static_cast<const T*>(logits.data_ptr()),
             static_cast<const int64_t*>(p.targets.data_ptr()), logits.size(0), p.args);
    };
    if (p.shape.warp)
      run(cross_entropy_kernel<T, WarpGroup>);
    else
      run(cross_entropy_kernel<T, BlockGroup>);
  });
}

void run_cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                                const Tensor& dloss, int64_t ignore_index) {
  const char* op = "cross_entropy_backward";
  RG_KERNEL_CONTRACT(check_cross_entropy_backward(dlogits, logits, targets, dloss));
  if (logits.size(0) == 0) return;
  Prepared p = prepare(op, logits, targets, ignore_index, true);
  dispatch_dtype<DTypes::floating, bf16>(logits.dtype(), op, [&]<typename T>(TypeTag<T>) {
    dispatch_row_shape<acc_t<T>>(p.shape, [&]<int N, typename G>(Slots<N>, TypeTag<G>) {
      launch(cross_entropy_backward_kernel<T, N, G>, p.cfg, static_cast<T*>(dlogits.data_ptr()),
             dlogits.stride(0), dlogits.stride(1), static_cast<const T*>(logits.data_ptr()),
             static_cast<const int64_t*>(p.targets.data_ptr()),
             static_cast<const T*>(dloss.data_ptr()),
             dloss.dim() == 0 ? int64_t(0) : dloss.stride(0), logits.size(0), p.args);
    });
  });
}

}  // namespace

void register_cross_entropy_kernels(KernelTable& k) {
  k.cross_entropy = run_cross_entropy;
  k.cross_entropy_backward = run_cross_entropy_backward;
}
}  // namespace rg::RG_BACKEND
