// Embedding lookup and its backward. weight/grad_weight [V, D] and out/grad_out [N, D] any
// strides; indices: N int64/int32 values (any shape/strides, made contiguous int64).
//   forward:  out[n, :] = weight[indices[n], :]        one thread per (n, d) element
//   backward: grad_weight[indices[n], :] += grad_out[n, :]   atomicAdd per element (bf16:
//             a 16-bit compare-and-swap). On a GPU the order of the
//             additions to a repeated row varies, so results may differ in the last bits
//             from run to run (the cpu kernel sums in order); sim runs in order.
// An index out of range is reported through a DeviceErrorSlot and thrown at the next host
// synchronization (kernels/cuda/device_errors.h).
#include "kernels/cuda/common.cuh"

namespace rg::RG_BACKEND {
namespace {

struct Geometry {
  int64_t n, d, vocab;
  int64_t ws0, ws1, os0, os1;  // table ([V, D]) and rows ([N, D]) strides
};

__device__ inline bool check_index(int64_t v, int64_t vocab, int64_t* error) {
  if (v >= 0 && v < vocab) return true;
  record_device_error(error, v);
  return false;
}

template <typename T>
__global__ void embedding_kernel(T* out, const T* weight, const int64_t* indices, Geometry g,
                                 int64_t* error) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= g.n * g.d) return;
  int64_t r = i / g.d, j = i % g.d, v = indices[r];
  T value = convert<T>(0);
  if (check_index(v, g.vocab, error)) value = weight[v * g.ws0 + j * g.ws1];
  out[r * g.os0 + j * g.os1] = value;
}

__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(bf16* p, float v) {
  // On the 16 bits themselves (atomicCAS on unsigned short: sm_70+). The aligned 32-bit word
  // around the last element of a tensor would reach 2 bytes past its end (sim-check memcheck).
  auto* bits = reinterpret_cast<unsigned short*>(p);
  unsigned short old = *bits, assumed;
  do {
    assumed = old;
    unsigned short next = float_to_bf16(bf16_to_float(bf16{assumed}) + v).bits;
    old = atomicCAS(bits, assumed, next);
  } while (old != assumed);
}

template <typename T>
__global__ void embedding_backward_kernel(T* grad_weight, const T* grad_out, const int64_t* indices,
                                          Geometry g, int64_t* error) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= g.n * g.d) return;
  int64_t r = i / g.d, j = i % g.d, v = indices[r];
  if (!check_index(v, g.vocab, error)) return;
  atomic_add(grad_weight + v * g.ws0 + j * g.ws1,
             convert<acc_t<T>>(grad_out[r * g.os0 + j * g.os1]));
}

LaunchConfig config(const char* name, const Geometry& g, const Tensor& t) {
  LaunchConfig cfg;
  cfg.name = name;
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(g.n * g.d, 256)));
  cfg.block = dim3(256);
  cfg.stream = stream_for(t);
  cfg.uses_sync = false;
  return cfg;
}

Tensor checked_indices(const Tensor& indices, const char* op) {
  RG_DEBUG_ASSERT(indices.dtype() == DType::i64 || indices.dtype() == DType::i32, op,
                  ": indices must be int64 or int32, got ", indices.dtype());
  return contiguous_as(indices, DType::i64);
}

void run_embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const char* op = "embedding";
  RG_DEBUG_ASSERT(weight.dim() == 2 && out.dim() == 2, op, ": weight ", shape_str(weight.shape()),
                  " and out ", shape_str(out.shape()), " must be 2-D");
  Tensor idx = checked_indices(indices, op);
  RG_DEBUG_ASSERT(
      out.size(0) == idx.numel() && out.size(1) == weight.size(1) && out.dtype() == weight.dtype(),
      op, ": out ", shape_str(out.shape()), " does not match [", idx.numel(), ",", weight.size(1),
      "]");
  Geometry g{idx.numel(),      weight.size(1), weight.size(0), weight.stride(0),
             weight.stride(1), out.stride(0),  out.stride(1)};
  if (g.n * g.d == 0) return;
  DeviceErrorSlot error(out.device(), str(op, ": index "),
                        str(" out of range for vocab size ", g.vocab));
  dispatch_dtype<DTypes::all, bf16>(weight.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(embedding_kernel<T>, config(op, g, out), static_cast<T*>(out.data_ptr()),
           static_cast<const T*>(weight.data_ptr()), static_cast<const int64_t*>(idx.data_ptr()), g,
           error.data());
  });
}

void run_embedding_backward(const Tensor& grad_weight, const Tensor& grad_out,
                            const Tensor& indices) {
  const char* op = "embedding_backward";
  RG_DEBUG_ASSERT(grad_weight.dim() == 2 && grad_out.dim() == 2, op,
                  ": grad_weight and grad_out must be 2-D");
  Tensor idx = checked_indices(indices, op);
  RG_DEBUG_ASSERT(grad_out.size(0) == idx.numel() && grad_out.size(1) == grad_weight.size(1) &&
                      grad_out.dtype() == grad_weight.dtype(),
                  op, ": grad_out ", shape_str(grad_out.shape()), " does not match ", idx.numel(),
                  " indices and grad_weight ", shape_str(grad_weight.shape()));
  Geometry g{idx.numel(),           grad_weight.size(1), grad_weight.size(0), grad_weight.stride(0),
             grad_weight.stride(1), grad_out.stride(0),  grad_out.stride(1)};
  if (g.n * g.d == 0) return;
  DeviceErrorSlot error(grad_weight.device(), str(op, ": index "),
                        str(" out of range for vocab size ", g.vocab));
  dispatch_dtype<DTypes::floating, bf16>(grad_weight.dtype(), op, [&]<typename T>(TypeTag<T>) {
    launch(embedding_backward_kernel<T>, config(op, g, grad_weight),
           static_cast<T*>(grad_weight.data_ptr()), static_cast<const T*>(grad_out.data_ptr()),
           static_cast<const int64_t*>(idx.data_ptr()), g, error.data());
  });
}

}  // namespace

void register_embedding_kernels(KernelTable& k) {
  k.embedding = run_embedding;
  k.embedding_backward = run_embedding_backward;
}
}  // namespace rg::RG_BACKEND
