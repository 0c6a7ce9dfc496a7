// random: element i (row-major) of out gets philox_uniform / philox_normal(seed, offset + i)
// (core/philox.h, shared with the cpu kernel, so every device draws the same numbers),
// converted to out's dtype (f32, f64, bf16). Any strides: an OffsetCalc maps i to memory.
// Launch: one thread per element, 256 per block, no sync.
#include "core/philox.h"
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T>
__global__ void random_kernel(T* out, int64_t n, OffsetCalc<1> calc, bool normal, uint64_t seed,
                              uint64_t offset) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t counter = offset + static_cast<uint64_t>(i);
  float v = normal ? philox_normal(seed, counter) : philox_uniform(seed, counter);
  int64_t at;
  calc.offsets(i, &at);
  out[at] = convert<T>(v);
}

void run_random(const Tensor& out, RandomKind kind, uint64_t seed, uint64_t offset) {
  int64_t n = out.numel();
  if (n == 0) return;
  auto calc = make_offset_calc<1>("random", out.shape(), {&out.strides()});
  LaunchConfig cfg;
  cfg.name = "random";
  cfg.grid = dim3(static_cast<unsigned>(ceil_div(n, 256)));
  cfg.block = dim3(256);
  cfg.stream = stream_for(out);
  cfg.uses_sync = false;
  dispatch_dtype<DTypes::floating, bf16>(out.dtype(), "random", [&]<typename T>(TypeTag<T>) {
    launch(random_kernel<T>, cfg, static_cast<T*>(out.data_ptr()), n, calc,
           kind == RandomKind::normal, seed, offset);
  });
}

}  // namespace

void register_random_kernels(KernelTable& k) { k.random = run_random; }
}  // namespace rg::RG_BACKEND
