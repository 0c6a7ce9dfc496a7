// The work list of the CPU multi-tensor kernels (adamw_multi, sum_squares_multi): every
// tensor cut into fixed chunks of `chunk` elements, in list order. The cut depends on the
// shapes only, never on the thread count, so reductions over it are deterministic.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

struct ChunkItem {
  int64_t tensor, begin, end;  // elements [begin, end) of tensor `tensor`
};

// The chunks of tensors of these sizes; a tensor of 0 elements has none.
inline std::vector<ChunkItem> chunk_items(const std::vector<int64_t>& numels, int64_t chunk) {
  std::vector<ChunkItem> items;
  for (size_t t = 0; t < numels.size(); ++t)
    for (int64_t b = 0; b < numels[t]; b += chunk)
      items.push_back({int64_t(t), b, std::min(numels[t], b + chunk)});
  return items;
}

// Items per parallel_for task so that a task holds about kGrainSize elements on average
// (many small tensors share a task; a lone small list runs inline).
inline int64_t grain_items(const std::vector<ChunkItem>& items, int64_t total_elements) {
  if (items.empty() || total_elements == 0) return 1;
  return std::max<int64_t>(1, kGrainSize * int64_t(items.size()) / total_elements);
}

}  // namespace rg::cpu::RG_CPU_CAP
