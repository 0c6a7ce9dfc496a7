// Multi-tensor sum of squares (the gradient norm): out[i] = sum of double(x)^2 over
// tensors[i], for a list of tensors of one floating dtype. Two passes, split by the sizes
// only, so the bits are deterministic: (1) one launch per TensorBatch (multi_tensor.cuh): a
// 512-thread block per (tensor, chunk of 65536 elements), each thread striding its chunk in
// 16-byte vectors after its head (walk_chunk), summing in double, then a block all-reduction
// (block_reduce.cuh) into the chunk's partial; (2) a thread per tensor adds its chunk partials in
// order into out. The order differs from the cpu kernel's 16 lanes, so cpu and sim agree to
// rounding (not bit for bit).
#include <algorithm>
#include <array>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/multi_tensor.cuh"

namespace rg::RG_BACKEND {
namespace {

constexpr int kThreads = 512;
constexpr int kCombineTensors = 256;  // tensors per launch of the combine pass

template <typename T>
__global__ void __launch_bounds__(kThreads)
    sum_squares_chunks_kernel(TensorBatch<1> batch, double* partials) {
  __shared__ double scratch[32];
  const int t = batch.block_tensor[blockIdx.x];
  const int64_t begin = int64_t(batch.block_chunk[blockIdx.x]) * kChunk;
  const int64_t n = min_of(kChunk, batch.numel[t] - begin);
  const T* x = static_cast<const T*>(batch.ptr[0][t]) + begin;
  double acc = 0.0;
  auto add_square = [&](T xi) {
    const double v = double(convert<acc_t<T>>(xi));
    acc += v * v;
  };
  walk_chunk<Vec16<T>::kN>(
      n, batch.head[t],
      [&](int64_t j) {
        const Vec16<T> xv = load16(x + j);
        RG_UNROLL
        for (int k = 0; k < Vec16<T>::kN; ++k) add_square(xv.v[k]);
      },
      [&](int64_t j) { add_square(x[j]); });
  acc = block_allreduce(acc, SumOp{}, 0.0, scratch);
  if (threadIdx.x == 0) partials[batch.first_slot[t] + batch.block_chunk[blockIdx.x]] = acc;
}

struct CombineList {
  int64_t first_slot[kCombineTensors];
  int64_t chunks[kCombineTensors];
};

__global__ void sum_squares_combine_kernel(CombineList list, int count, const double* partials,
                                           double* out) {
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= count) return;
  double s = 0.0;
  for (int64_t c = 0; c < list.chunks[t]; ++c) s += partials[list.first_slot[t] + c];
  out[t] = s;
}

void run_sum_squares(const Tensor& out, const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return;
  std::vector<std::array<void*, 1>> ptrs;
  std::vector<int64_t> numels, first_slot;
  int64_t slots = 0;
  for (const Tensor& t : tensors) {
    ptrs.push_back({t.data_ptr()});
    numels.push_back(t.numel());
    first_slot.push_back(slots);
    slots += ceil_div(t.numel(), kChunk);
  }
  Tensor scratch = empty({std::max<int64_t>(slots, 1)}, DType::f64, out.device());
  auto* partials = static_cast<double*>(scratch.data_ptr());
  LaunchConfig cfg;
  cfg.name = "sum_squares_multi";
  cfg.block = dim3(kThreads);
  cfg.stream = stream_for(out);
  dispatch_dtype<DTypes::floating, bf16>(
      tensors[0].dtype(), "sum_squares_multi", [&]<typename T>(TypeTag<T>) {
        for_each_batch<1>(ptrs, numels, sizeof(T), [&](const TensorBatch<1>& b, int blocks) {
          cfg.grid = dim3(static_cast<unsigned>(blocks));
          launch(sum_squares_chunks_kernel<T>, cfg, b, partials);
        });
      });
  cfg.name = "sum_squares_multi_combine";
  cfg.block = dim3(128);
  cfg.uses_sync = false;
  for (size_t base = 0; base < tensors.size(); base += kCombineTensors) {
    const int count = int(std::min<size_t>(kCombineTensors, tensors.size() - base));
    CombineList list{};
    for (int i = 0; i < count; ++i)
      list.first_slot[i] = first_slot[base + i],
      list.chunks[i] = ceil_div(numels[base + i], kChunk);
    cfg.grid = dim3(static_cast<unsigned>(ceil_div(count, 128)));
    launch(sum_squares_combine_kernel, cfg, list, count, static_cast<const double*>(partials),
           static_cast<double*>(out.data_ptr()) + base);
  }
}

}  // namespace

void register_sum_squares_kernels(KernelTable& k) { k.sum_squares_multi = run_sum_squares; }
}  // namespace rg::RG_BACKEND
