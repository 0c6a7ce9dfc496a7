// CPU multi-tensor scale (gradient clipping): x = x * s in place for every tensor of a list
// (one floating dtype), in one parallel pass over fixed chunks (kernels/cpu/multi_tensor.h).
// s is the scale as stored in the dtype (the op passes it already rounded); the product is
// taken in the compute type (float for bf16) and rounded once: the bits of x.mul_(s).
#include "core/dispatch.h"
#include "core/op_table.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/multi_tensor.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kChunk = 16384;

template <typename T>
void scale_typed(const std::vector<Tensor>& tensors, double scale) {
  using C = compute_t<T>;
  const C s = C(scale);
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (const Tensor& t : tensors) numels.push_back(t.numel()), total += numels.back();
  const std::vector<ChunkItem> items = chunk_items(numels, kChunk);
  parallel_for(int64_t(items.size()), grain_items(items, total), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      T* x = tensors[items[k].tensor].data<T>();
      for (int64_t i = items[k].begin; i < items[k].end; ++i) x[i] = T(C(x[i]) * s);
    }
  });
}

void scale_multi(const std::vector<Tensor>& tensors, double scale) {
  if (tensors.empty()) return;
  for (const Tensor& t : tensors)
    RG_DEBUG_ASSERT(t.dtype() == tensors[0].dtype() && t.is_contiguous(),
                    "scale_multi: tensors must be contiguous and of one dtype");
  dispatch_dtype<DTypes::floating>(tensors[0].dtype(), "scale_multi",
                                   [&]<typename T>(TypeTag<T>) { scale_typed<T>(tensors, scale); });
}

}  // namespace

void register_scale_multi_kernels(KernelTable& k) { k.scale_multi = scale_multi; }
}  // namespace rg::cpu::RG_CPU_CAP
