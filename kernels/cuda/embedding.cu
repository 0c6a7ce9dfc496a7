// Embedding lookup and its backward. weight/grad_weight [V, D] and out/grad_out [N, D] any
// strides; indices: N int64/int32 values (any shape/strides, made contiguous int64).
//   forward:  out[n, :] = weight[indices[n], :]
//   backward: grad_weight[indices[n], :] += grad_out[n, :]   atomicAdd per element (bf16:
//             a 16-bit compare-and-swap). On a GPU the order of the
//             additions to a repeated row varies, so results may differ in the last bits
//             from run to run (the cpu kernel sums in order); sim runs in order.
// Launch: thread x of the grid's x dimension owns column x of D (a 16-byte vector of columns
// when the rows are dense and aligned), and grid row y the rows
// y, y + gridDim.y, ... (at most 65535 grid rows): no division per element (a 64-bit i / D
// and i % D per element held the forward at 0.39x a memcpy on an H200).
// An index out of range is reported through a DeviceErrorSlot and thrown at the next host
// synchronization (kernels/cuda/device_errors.h).
#include <algorithm>

#include "kernels/contracts.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/vec16.cuh"

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
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= g.d) return;
  for (int64_t r = blockIdx.y; r < g.n; r += gridDim.y) {
    const int64_t v = indices[r];
    T value = convert<T>(0);
    if (check_index(v, g.vocab, error)) value = weight[v * g.ws0 + j * g.ws1];
    out[r * g.os0 + j * g.os1] = value;
  }
}

// The forward where rows are dense and 16-byte aligned (weight and out of stride 1 along D,
// D and both row strides multiples of a vector): thread x moves columns [x * kN, +kN) as one
// 16-byte load and store per row.
template <typename T>
__global__ void embedding_vector_kernel(T* out, const T* weight, const int64_t* indices, Geometry g,
                                        int64_t* error) {
  constexpr int kN = Vec16<T>::kN;
  const int64_t j = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) * kN;
  if (j >= g.d) return;
  for (int64_t r = blockIdx.y; r < g.n; r += gridDim.y) {
    const int64_t v = indices[r];
    Vec16<T> value{};
    if (check_index(v, g.vocab, error)) value = load16(weight + v * g.ws0 + j);
    store16(out + r * g.os0 + j, value);
  }
}

// True when the forward can move 16-byte vectors (embedding_vector_kernel).
template <typename T>
bool dense_rows(const Geometry& g, const void* out, const void* weight) {
  constexpr int kN = Vec16<T>::kN;
  return g.ws1 == 1 && g.os1 == 1 && g.d % kN == 0 && g.ws0 % kN == 0 && g.os0 % kN == 0 &&
         aligned16(out) && aligned16(weight);
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
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= g.d) return;
  for (int64_t r = blockIdx.y; r < g.n; r += gridDim.y) {
    const int64_t v = indices[r];
    if (check_index(v, g.vocab, error))
      atomic_add(grad_weight + v * g.ws0 + j * g.ws1,
                 convert<acc_t<T>>(grad_out[r * g.os0 + j * g.os1]));
  }
}

// columns_per_thread: 1, or a vector's elements (embedding_vector_kernel).
LaunchConfig config(const char* name, const Geometry& g, const Tensor& t,
                    int64_t columns_per_thread = 1) {
  LaunchConfig cfg;
  cfg.name = name;
  const int64_t columns = ceil_div(g.d, columns_per_thread);
  const int64_t threads = std::min<int64_t>(256, ceil_div(columns, int64_t(32)) * 32);
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(columns, threads)),
                  static_cast<unsigned>(std::min<int64_t>(g.n, 65535)));
  cfg.block = dim3(static_cast<unsigned>(threads));
  cfg.stream = stream_for(t);
  cfg.uses_sync = false;
  return cfg;
}

void run_embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const char* op = "embedding";
  RG_KERNEL_CONTRACT(check_embedding(out, weight, indices));
  Tensor idx = contiguous_as(indices, DType::i64);
  Geometry g{idx.numel(),      weight.size(1), weight.size(0), weight.stride(0),
             weight.stride(1), out.stride(0),  out.stride(1)};
  if (g.n * g.d == 0) return;
  DeviceErrorSlot error(out.device(), str(op, ": index "),
                        str(" out of range for vocab size ", g.vocab));
  dispatch_dtype<DTypes::all, bf16>(weight.dtype(), op, [&]<typename T>(TypeTag<T>) {
    auto* o = static_cast<T*>(out.data_ptr());
    auto* w = static_cast<const T*>(weight.data_ptr());
    auto* i = static_cast<const int64_t*>(idx.data_ptr());
    if (dense_rows<T>(g, o, w))
      launch(embedding_vector_kernel<T>, config(op, g, out, Vec16<T>::kN), o, w, i, g,
             error.data());
    else
      launch(embedding_kernel<T>, config(op, g, out), o, w, i, g, error.data());
  });
}

void run_embedding_backward(const Tensor& grad_weight, const Tensor& grad_out,
                            const Tensor& indices) {
  const char* op = "embedding_backward";
  RG_KERNEL_CONTRACT(check_embedding_backward(grad_weight, grad_out, indices));
  Tensor idx = contiguous_as(indices, DType::i64);
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
