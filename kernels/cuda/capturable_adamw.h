// Capturable AdamW for graph capture (kernels/cuda/graph.h), as PyTorch's capturable=True:
// adamw_multi's update, whose kernels read their scalars (an AdamWScalars<T>,
// kernels/adamw_scalars.h) from device memory when they run instead of from their launch
// arguments, so that a replay uses the step count, lr and clip scale written there before it.
#pragma once
#include <vector>

#include "core/op_table.h"

namespace rg::gpu {

// The update of `sets` (adamw_multi's contract: one sim or cuda device, one dtype f32/f64)
// with the scalars at `scalars`, device memory of the sets' device holding an AdamWScalars<T>
// of their dtype T.
void adamw_multi_from_device(const std::vector<AdamWTensors>& sets, const void* scalars);

}  // namespace rg::gpu

namespace rg::sim {
void run_adamw_multi_from_device(const std::vector<AdamWTensors>& sets, const void* scalars);
}
namespace rg::cuda {
void run_adamw_multi_from_device(const std::vector<AdamWTensors>& sets, const void* scalars);
}
