// Fused softmax + cross-entropy. logits [N, C] any strides; targets [N] int64/int32 (any
// strides, made contiguous int64); loss and dloss [N] (or 0-d when N == 1) in logits' dtype.
//   forward:  loss[n] = log(sum exp(x - max)) - (x[n, t] - max); 0 where t == ignore_index
//   backward: dlogits[n] = softmax(x[n]) * dloss[n], minus dloss[n] at t; 0 rows if ignored
// exp sums in double, bf16 computes in float (as the cpu kernel). A target out of range
// is reported through a DeviceErrorSlot and thrown at the next host synchronization.
// Launch: one block (32..512 threads) per row; max and sum are block all-reductions.
#include <limits>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

struct RowArgs {
  int64_t c, s0, s1;  // classes and logits strides
  int64_t ignore_index;
  int64_t* error;  // DeviceErrorSlot
};

// max and log(sum(exp(x - max))) of a row, on every thread of the block.
template <typename T>
__device__ inline void row_logsumexp(const T* x, const RowArgs& a, acc_t<T>* mx,
                                     acc_t<T>* log_sum) {
  using C = acc_t<T>;
  __shared__ C scratch_c[32];
  __shared__ double scratch_d[32];
  const C neg_inf = -std::numeric_limits<C>::infinity();
  C m = neg_inf;
  for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) m = MaxOp()(m, convert<C>(x[j * a.s1]));
  m = block_allreduce(m, MaxOp(), neg_inf, scratch_c);
  if (m == neg_inf) m = C(0);
  double sum = 0;
  for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x)
    sum += double(m_exp(convert<C>(x[j * a.s1]) - m));
  sum = block_allreduce(sum, SumOp(), 0.0, scratch_d);
  *mx = m;
  *log_sum = C(log(sum));
}

// The row's target, or -1 when ignored or out of range (then reported).
__device__ inline int64_t row_target(const int64_t* targets, const RowArgs& a) {
  int64_t t = targets[blockIdx.x];
  if (t == a.ignore_index) return -1;
  if (t < 0 || t >= a.c) {
    if (threadIdx.x == 0) record_device_error(a.error, t);
    return -1;
  }
  return t;
}

template <typename T>
__global__ void cross_entropy_kernel(T* loss, int64_t loss_stride, const T* logits,
                                     const int64_t* targets, RowArgs a) {
  using C = acc_t<T>;
  int64_t t = row_target(targets, a);
  if (t < 0) {  // the whole block leaves together: no barrier is left half-reached
    if (threadIdx.x == 0) loss[blockIdx.x * loss_stride] = convert<T>(C(0));
    return;
  }
  const T* x = logits + blockIdx.x * a.s0;
  C mx, log_sum;
  row_logsumexp(x, a, &mx, &log_sum);
  if (threadIdx.x == 0)
    loss[blockIdx.x * loss_stride] = convert<T>(C(log_sum - (convert<C>(x[t * a.s1]) - mx)));
}

template <typename T>
__global__ void cross_entropy_backward_kernel(T* dlogits, int64_t d0, int64_t d1, const T* logits,
                                              const int64_t* targets, const T* dloss,
                                              int64_t dloss_stride, RowArgs a) {
  using C = acc_t<T>;
  T* drow = dlogits + blockIdx.x * d0;
  int64_t t = row_target(targets, a);
  if (t < 0) {
    for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) drow[j * d1] = convert<T>(C(0));
    return;
  }
  const T* x = logits + blockIdx.x * a.s0;
  C mx, log_sum;
  row_logsumexp(x, a, &mx, &log_sum);
  C g = convert<C>(dloss[blockIdx.x * dloss_stride]);
  for (int64_t j = threadIdx.x; j < a.c; j += blockDim.x) {
    T p = convert<T>(C(m_exp((convert<C>(x[j * a.s1]) - mx) - log_sum) * g));
    drow[j * d1] = j == t ? convert<T>(C(convert<C>(p) - g)) : p;
  }
}

struct Prepared {
  Tensor targets;  // contiguous int64
  DeviceErrorSlot error;
  RowArgs args;
  LaunchConfig cfg;
};

Prepared prepare(const char* op, const Tensor& logits, const Tensor& targets,
                 int64_t ignore_index) {
  RG_DEBUG_ASSERT(logits.dim() == 2, op, ": logits must be [N, C], got ",
                  shape_str(logits.shape()));
  RG_DEBUG_ASSERT(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, op,
                  ": targets must be int64 or int32, got ", targets.dtype());
  RG_DEBUG_ASSERT(targets.numel() == logits.size(0), op, ": ", targets.numel(),
                  " targets for logits ", shape_str(logits.shape()));
  Prepared p{contiguous_as(targets, DType::i64),
             DeviceErrorSlot(logits.device(), str(op, ": target "),
                             str(" out of range for ", logits.size(1), " classes")),
             {},
             {}};
  p.args =
      RowArgs{logits.size(1), logits.stride(0), logits.stride(1), ignore_index, p.error.data()};
  int64_t threads = 32;
  while (threads < logits.size(1) && threads < 512) threads *= 2;
  p.cfg.name = op;
  p.cfg.grid = dim3(static_cast<unsigned>(logits.size(0)));
  p.cfg.block = dim3(static_cast<unsigned>(threads));
  p.cfg.stream = stream_for(logits);
  return p;
}

void run_cross_entropy(const Tensor& loss, const Tensor& logits, const Tensor& targets,
                       int64_t ignore_index) {
  const char* op = "cross_entropy";
  RG_DEBUG_ASSERT(logits.dim() == 2 && loss.numel() == logits.size(0) && loss.dim() <= 1 &&
                      loss.dtype() == logits.dtype(),
                  op, ": loss ", shape_str(loss.shape()), " does not match logits ",
                  shape_str(logits.shape()));
  if (logits.size(0) == 0) return;
  Prepared p = prepare(op, logits, targets, ignore_index);
  dispatch_dtype<DTypes::floating, bf16>(logits.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(cross_entropy_kernel<T>, p.cfg, static_cast<T*>(loss.data_ptr()),
           loss.dim() == 0 ? int64_t(0) : loss.stride(0), static_cast<const T*>(logits.data_ptr()),
           static_cast<const int64_t*>(p.targets.data_ptr()), p.args);
  });
}

void run_cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets,
                                const Tensor& dloss, int64_t ignore_index) {
  const char* op = "cross_entropy_backward";
  RG_DEBUG_ASSERT(dlogits.shape() == logits.shape() && dlogits.dtype() == logits.dtype(), op,
                  ": dlogits ", shape_str(dlogits.shape()), " does not match logits ",
                  shape_str(logits.shape()));
  RG_DEBUG_ASSERT(logits.dim() == 2 && dloss.numel() == logits.size(0) && dloss.dim() <= 1 &&
                      dloss.dtype() == logits.dtype(),
                  op, ": dloss ", shape_str(dloss.shape()), " does not match logits ",
                  shape_str(logits.shape()));
  if (logits.size(0) == 0) return;
  Prepared p = prepare(op, logits, targets, ignore_index);
  dispatch_dtype<DTypes::floating, bf16>(logits.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(cross_entropy_backward_kernel<T>, p.cfg, static_cast<T*>(dlogits.data_ptr()),
           dlogits.stride(0), dlogits.stride(1), static_cast<const T*>(logits.data_ptr()),
           static_cast<const int64_t*>(p.targets.data_ptr()),
           static_cast<const T*>(dloss.data_ptr()), dloss.dim() == 0 ? int64_t(0) : dloss.stride(0),
           p.args);
  });
}

}  // namespace

void register_cross_entropy_kernels(KernelTable& k) {
  k.cross_entropy = run_cross_entropy;
  k.cross_entropy_backward = run_cross_entropy_backward;
}
}  // namespace rg::RG_BACKEND
