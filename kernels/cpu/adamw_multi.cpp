// CPU fused AdamW, for a list of parameters (adamw_multi) or one (adamw): one parallel pass
// over a work list of fixed chunks of all tensors (kernels/cpu/multi_tensor.h). Same
// operation order as PyTorch's single-tensor (non-foreach) AdamW, with its scalars computed
// in double and rounded once to the tensor dtype (kernels/adamw_scalars.h), so a list gives
// the bits of one call per tensor.
// Clipping folds in: each gradient element is read as T(g * T(grad_scale)), the rounding of
// g.mul_(grad_scale), so a step with grad_scale s equals scaling the gradients then stepping.
#include <cmath>

#include "core/dispatch.h"
#include "core/op_table.h"
#include "kernels/adamw_scalars.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/multi_tensor.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kChunk = 16384;

// Elements [0, n) of one chunk; Scaled: the gradient is multiplied by s.grad_scale first;
// LerpLow: PyTorch's lerp branch for weight < 0.5. The scalars are copied to locals and the
// four arrays never alias, so the loop vectorises (with the scalars read through `s` and the
// branch inside, it stayed scalar: 3 ns per parameter at GPT 2 x 128). Vector sqrt and
// division round as the scalar ones: the same bits.
template <typename T, bool Scaled, bool LerpLow>
void update(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
            const AdamWScalars<T>& s) {
  const T decay = s.decay, w1 = s.w1, b2 = s.b2, w2 = s.w2, step_size = s.step_size;
  const T bc2_sqrt = s.bc2_sqrt, eps = s.eps, grad_scale = s.grad_scale;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    T pi = p[i] * decay;
    T gi = Scaled ? T(g[i] * grad_scale) : g[i];
    T mi = LerpLow ? m[i] + w1 * (gi - m[i]) : gi - (gi - m[i]) * (T(1) - w1);
    T vi = v[i] * b2 + w2 * gi * gi;
    T denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = pi + step_size * mi / denom;
    m[i] = mi;
    v[i] = vi;
  }
}

template <typename T>
void update_chunk(T* p, const T* g, T* m, T* v, int64_t n, const AdamWScalars<T>& s, bool scaled) {
  if (scaled)
    s.lerp_low ? update<T, true, true>(p, g, m, v, n, s) : update<T, true, false>(p, g, m, v, n, s);
  else
    s.lerp_low ? update<T, false, true>(p, g, m, v, n, s)
               : update<T, false, false>(p, g, m, v, n, s);
}

template <typename T>
void adamw_multi_typed(const std::vector<AdamWTensors>& sets, const AdamWScalars<T>& s,
                       bool scaled) {
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (const AdamWTensors& t : sets) numels.push_back(t.param.numel()), total += numels.back();
  const std::vector<ChunkItem> items = chunk_items(numels, kChunk);
  parallel_for(int64_t(items.size()), grain_items(items, total), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const ChunkItem& c = items[k];
      const AdamWTensors& t = sets[c.tensor];
      T* p = t.param.data<T>() + c.begin;
      const T* g = t.grad.data<T>() + c.begin;
      T* m = t.exp_avg.data<T>() + c.begin;
      T* v = t.exp_avg_sq.data<T>() + c.begin;
      update_chunk(p, g, m, v, c.end - c.begin, s, scaled);
    }
  });
}

// `op` names the kernel in errors: adamw or adamw_multi.
void run_adamw(const char* op, const std::vector<AdamWTensors>& sets, const AdamWArgs& args,
               double grad_scale) {
  if (sets.empty()) return;
  const Tensor& first = sets[0].param;
  for (const AdamWTensors& t : sets)
    for (const Tensor* x : {&t.param, &t.grad, &t.exp_avg, &t.exp_avg_sq})
      RG_DEBUG_ASSERT(
          x->shape() == t.param.shape() && x->dtype() == first.dtype() && x->is_contiguous(), op,
          ": tensor ", shape_str(x->shape()), " ", x->dtype(), " does not match parameter ",
          shape_str(t.param.shape()), " ", first.dtype(), " (or is not contiguous)");
  RG_DEBUG_ASSERT(args.step >= 1, op, ": step must be >= 1, got ", args.step);
  dispatch_dtype<DTypes::f32_f64>(first.dtype(), op, [&]<typename T>(TypeTag<T>) {
    adamw_multi_typed<T>(sets, adamw_scalars<T>(args, grad_scale), grad_scale != 1.0);
  });
}

void adamw_multi(const std::vector<AdamWTensors>& sets, const AdamWArgs& args, double grad_scale) {
  run_adamw("adamw_multi", sets, args, grad_scale);
}

}  // namespace

void register_adamw_multi_kernels(KernelTable& k) {
  k.adamw_multi = adamw_multi;
  k.adamw = [](const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
               const Tensor& exp_avg_sq, const AdamWArgs& args) {
    run_adamw("adamw", {AdamWTensors{param, grad, exp_avg, exp_avg_sq}}, args, 1.0);
  };
}
}  // namespace rg::cpu::RG_CPU_CAP
