// Multi-tensor scale (gradient clipping): x = x * s in place for every tensor of a list of
// one floating dtype, one launch per TensorBatch (multi_tensor.cuh: a 512-thread block per
// (tensor, chunk of 65536 elements), threads striding the chunk in 16-byte vectors after
// its head, coalesced). s is the scale as stored in the dtype (the op rounds it); the product
// is taken in the compute type and rounded once (__fmul_rn / __dmul_rn: never fused), the
// bits of x.mul_(s).
#include "kernels/cuda/multi_tensor.cuh"
#include "kernels/cuda/scalar_ops.cuh"

namespace rg::RG_BACKEND {
namespace {

constexpr int kThreads = 512;

template <typename T>
__global__ void __launch_bounds__(kThreads) scale_multi_kernel(TensorBatch<1> batch, double scale) {
  using C = acc_t<T>;
  const int t = batch.block_tensor[blockIdx.x];
  const int64_t begin = int64_t(batch.block_chunk[blockIdx.x]) * kChunk;
  const int64_t n = min_of(kChunk, batch.numel[t] - begin);
  T* x = static_cast<T*>(batch.ptr[0][t]) + begin;
  const C s = C(scale);
  auto scale_one = [&](T xi) { return convert<T>(mul_rounded(convert<C>(xi), s)); };
  walk_chunk<Vec16<T>::kN>(
      n, batch.head[t],
      [&](int64_t j) {
        Vec16<T> xv = load16(x + j);
        RG_UNROLL
        for (int k = 0; k < Vec16<T>::kN; ++k) xv.v[k] = scale_one(xv.v[k]);
        store16(x + j, xv);
      },
      [&](int64_t j) { x[j] = scale_one(x[j]); });
}

void run_scale_multi(const std::vector<Tensor>& tensors, double scale) {
  if (tensors.empty()) return;
  std::vector<std::array<void*, 1>> ptrs;
  std::vector<int64_t> numels;
  for (const Tensor& t : tensors) ptrs.push_back({t.data_ptr()}), numels.push_back(t.numel());
  LaunchConfig cfg;
  cfg.name = "scale_multi";
  cfg.block = dim3(kThreads);
  cfg.stream = stream_for(tensors[0]);
  cfg.uses_sync = false;
  dispatch_dtype<DTypes::floating, bf16>(
      tensors[0].dtype(), "scale_multi", [&]<typename T>(TypeTag<T>) {
        for_each_batch<1>(ptrs, numels, sizeof(T), [&](const TensorBatch<1>& b, int blocks) {
          cfg.grid = dim3(static_cast<unsigned>(blocks));
          launch(scale_multi_kernel<T>, cfg, b, scale);
        });
      });
}

}  // namespace

void register_scale_multi_kernels(KernelTable& k) { k.scale_multi = run_scale_multi; }
}  // namespace rg::RG_BACKEND
