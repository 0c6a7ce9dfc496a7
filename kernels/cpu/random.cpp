// CPU random fill with Philox (core/philox.h): element i of `out` in row-major order gets
// philox_uniform / philox_normal(seed, offset + i), converted to out's dtype (f32, f64,
// bf16). The numbers depend only on (seed, offset, i), so the result is the same for any
// thread count and on every device. Non-contiguous outputs are written through their
// strides (element i still means the i-th element in row-major order).
#include "core/dispatch.h"
#include "core/op_table.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

template <typename T>
void random_typed(const Tensor& out, RandomKind kind, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  T* base = out.data<T>();
  const bool contiguous = out.is_contiguous();
  const Shape& shape = out.shape();
  const Strides& strides = out.strides();
  parallel_for(n, kGrainSize, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint64_t counter = offset + static_cast<uint64_t>(i);
      float v = kind == RandomKind::uniform ? philox_uniform(seed, counter)
                                            : philox_normal(seed, counter);
      int64_t at = i;
      if (!contiguous) {
        at = 0;
        int64_t rem = i;
        for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
          at += (rem % shape[d]) * strides[d];
          rem /= shape[d];
        }
      }
      base[at] = T(v);
    }
  });
}

void random(const Tensor& out, RandomKind kind, uint64_t seed, uint64_t offset) {
  dispatch_dtype<DTypes::floating>(out.dtype(), "random", [&]<typename T>(TypeTag<T>) {
    random_typed<T>(out, kind, seed, offset);
  });
}

}  // namespace

void register_random_kernels(KernelTable& k) { k.random = random; }
}  // namespace rg::cpu::RG_CPU_CAP
