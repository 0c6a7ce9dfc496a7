// Multi-tensor AdamW: the update of adamw.cu for a list of parameters of one dtype (f32 or
// f64), one launch per TensorBatch of up to 64 tensors and 2048 blocks (multi_tensor.cuh:
// block -> (tensor, chunk of 65536 elements)). Each thread of a 512-thread block walks its
// chunk in strides; where all four pointers of a tensor share their offset from a 16-byte
// boundary it moves 16-byte vectors (4 floats, 2 doubles) per load and store after the
// chunk's head (walk_chunk). Clipping folds in: each
// gradient element is read as T(g * T(grad_scale)), the rounding of g.mul_(grad_scale).
// Same scalars and operation order as adamw.cu, so grad_scale == 1 gives its bits.
// Capturable (the op table's adamw_multi_from_device): the scalars are
// read from device memory as the kernel runs, so a graph's replay sees those of its step.
#include <cmath>

#include "kernels/adamw_scalars.h"
#include "kernels/cuda/multi_tensor.cuh"
#include "kernels/cuda/scalar_ops.cuh"
#include "kernels/cuda/vec16.cuh"

namespace rg::RG_BACKEND {
namespace {

constexpr int kThreads = 512;

template <typename T>
__device__ inline void adamw_element(T& p, T g, T& m, T& v, const AdamWScalars<T>& s) {
  T pi = p * s.decay;
  T gi = s.scaled ? mul_rounded(g, s.grad_scale) : g;
  T mi = s.lerp_low ? m + s.w1 * (gi - m) : gi - (gi - m) * (T(1) - s.w1);
  T vi = v * s.b2 + s.w2 * gi * gi;
  T denom = m_sqrt(vi) / s.bc2_sqrt + s.eps;
  p = pi + s.step_size * mi / denom;
  m = mi;
  v = vi;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    adamw_multi_kernel(TensorBatch<4> batch, AdamWScalars<T> by_value,
                       const AdamWScalars<T>* from_device) {
  const AdamWScalars<T> s = from_device ? *from_device : by_value;
  const int t = batch.block_tensor[blockIdx.x];
  const int64_t begin = int64_t(batch.block_chunk[blockIdx.x]) * kChunk;
  const int64_t n = min_of(kChunk, batch.numel[t] - begin);
  T* p = static_cast<T*>(batch.ptr[0][t]) + begin;
  const T* g = static_cast<const T*>(batch.ptr[1][t]) + begin;
  T* m = static_cast<T*>(batch.ptr[2][t]) + begin;
  T* v = static_cast<T*>(batch.ptr[3][t]) + begin;
  walk_chunk<Vec16<T>::kN>(
      n, batch.head[t],
      [&](int64_t j) {
        Vec16<T> pv = load16(p + j), mv = load16(m + j), vv = load16(v + j);
        const Vec16<T> gv = load16(g + j);
        RG_UNROLL
        for (int k = 0; k < Vec16<T>::kN; ++k) adamw_element(pv.v[k], gv.v[k], mv.v[k], vv.v[k], s);
        store16(p + j, pv);
        store16(m + j, mv);
        store16(v + j, vv);
      },
      [&](int64_t j) { adamw_element(p[j], g[j], m[j], v[j], s); });
}

// Launches the update of `sets`: scalars by value from args and grad_scale, or, when
// `from_device` is set, read from that device memory (an AdamWScalars<T>).
void launch_adamw_multi(const std::vector<AdamWTensors>& sets, const AdamWArgs& args,
                        double grad_scale, const void* from_device) {
  if (sets.empty()) return;
  std::vector<std::array<void*, 4>> ptrs;
  std::vector<int64_t> numels;
  for (const AdamWTensors& t : sets) {
    ptrs.push_back(
        {t.param.data_ptr(), t.grad.data_ptr(), t.exp_avg.data_ptr(), t.exp_avg_sq.data_ptr()});
    numels.push_back(t.param.numel());
  }
  LaunchConfig cfg;
  cfg.name = "adamw_multi";
  cfg.block = dim3(kThreads);
  cfg.stream = stream_for(sets[0].param);
  cfg.uses_sync = false;
  dispatch_dtype<DTypes::f32_f64>(
      sets[0].param.dtype(), "adamw_multi", [&]<typename T>(TypeTag<T>) {
        const AdamWScalars<T> s = adamw_scalars<T>(args, grad_scale);
        const auto* scalars = static_cast<const AdamWScalars<T>*>(from_device);
        for_each_batch<4>(ptrs, numels, sizeof(T), [&](const TensorBatch<4>& batch, int blocks) {
          cfg.grid = dim3(static_cast<unsigned>(blocks));
          launch(adamw_multi_kernel<T>, cfg, batch, s, scalars);
        });
      });
}

void run_adamw_multi(const std::vector<AdamWTensors>& sets, const AdamWArgs& args,
                     double grad_scale) {
  RG_DEBUG_ASSERT(args.step >= 1, "adamw_multi: step must be >= 1, got ", args.step);
  launch_adamw_multi(sets, args, grad_scale, nullptr);
}

void run_adamw_multi_from_device(const std::vector<AdamWTensors>& sets, const void* scalars) {
  if (sets.empty()) return;
  RG_CHECK(scalars, "adamw_multi_from_device: no scalars");
  const Tensor& first = sets[0].param;
  for (const AdamWTensors& set : sets)
    RG_CHECK(set.param.device() == first.device() && set.grad.device() == first.device() &&
                 set.exp_avg.device() == first.device() &&
                 set.exp_avg_sq.device() == first.device() && set.param.dtype() == first.dtype(),
             "adamw_multi_from_device: every set on ", first.device().str(), " in one dtype");
  const AdamWArgs unused{0, 0, 0, 0, 0, 1};  // the kernel reads *scalars instead
  launch_adamw_multi(sets, unused, 1.0, scalars);
}

}  // namespace

void register_adamw_multi_kernels(KernelTable& k) {
  k.adamw_multi = run_adamw_multi;
  k.adamw_multi_from_device = run_adamw_multi_from_device;
}
}  // namespace rg::RG_BACKEND
