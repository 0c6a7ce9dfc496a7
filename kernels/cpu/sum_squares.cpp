// CPU multi-tensor sum of squares (the gradient norm): out[i] = sum over tensors[i] of
// double(x)^2. Each tensor is cut into chunks of kChunk elements (kernels/cpu/multi_tensor.h);
// a chunk sums into 16 fixed lanes closed by a fixed pairwise tree, and a tensor's chunk
// partials are added in order. That is the order of the reduce kernel's full sum
// (kernels/cpu/reduce.cpp, same kChunk and lanes) applied to square(x.to(f64)), so the result
// is bit-identical to sum(square(x.to(f64))) and independent of the thread count. The square
// and the add are kept apart (no fused multiply-add), as two kernels would round them.
#include <vector>

#include "core/dispatch.h"
#include "core/op_table.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/compute_type.h"
#include "kernels/cpu/multi_tensor.h"

namespace rg::cpu::RG_CPU_CAP {
namespace {

constexpr int64_t kChunk = 16384;  // = reduce.cpp's kChunk: part of the result's definition
constexpr int kLanes = 16;

template <typename T>
__attribute__((optimize("fp-contract=off"))) double chunk_sum_squares(const T* x, int64_t n) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const double v = double(compute_t<T>(x[i + l]));
      lanes[l] += v * v;
    }
  for (; i < n; ++i) {
    const double v = double(compute_t<T>(x[i]));
    lanes[0] += v * v;
  }
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  return lanes[0];
}

template <typename T>
void sum_squares_typed(double* out, const std::vector<Tensor>& tensors) {
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (const Tensor& t : tensors) numels.push_back(t.numel()), total += numels.back();
  const std::vector<ChunkItem> items = chunk_items(numels, kChunk);
  std::vector<double> partial(items.size());
  parallel_for(int64_t(items.size()), grain_items(items, total), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const ChunkItem& c = items[k];
      partial[k] = chunk_sum_squares(tensors[c.tensor].data<T>() + c.begin, c.end - c.begin);
    }
  });
  for (size_t t = 0; t < tensors.size(); ++t) out[t] = 0.0;
  std::vector<bool> started(tensors.size(), false);
  for (size_t k = 0; k < items.size(); ++k) {  // in order: the first partial, then +=
    const int64_t t = items[k].tensor;
    out[t] = started[t] ? out[t] + partial[k] : partial[k];
    started[t] = true;
  }
}

void sum_squares_multi(const Tensor& out, const std::vector<Tensor>& tensors) {
  RG_DEBUG_ASSERT(
      out.dtype() == DType::f64 && out.is_contiguous() && out.numel() == int64_t(tensors.size()),
      "sum_squares_multi: out must be a contiguous f64 [", tensors.size(), "], got ",
      shape_str(out.shape()), " ", out.dtype());
  if (tensors.empty()) return;
  for (const Tensor& t : tensors)
    RG_DEBUG_ASSERT(t.dtype() == tensors[0].dtype() && t.is_contiguous(),
                    "sum_squares_multi: tensors must be contiguous and of one dtype");
  dispatch_dtype<DTypes::floating>(
      tensors[0].dtype(), "sum_squares_multi",
      [&]<typename T>(TypeTag<T>) { sum_squares_typed<T>(out.data<double>(), tensors); });
}

}  // namespace

void register_sum_squares_kernels(KernelTable& k) { k.sum_squares_multi = sum_squares_multi; }
}  // namespace rg::cpu::RG_CPU_CAP
