// bench/kernels' attention table (kernels_attention.cpp): the tensor-core attention forward
// and backward, causal bf16, in TFLOP/s and as a fraction of bf16 peak (no floor).
#pragma once
#include "core/device.h"

namespace rg::bench {

void attention_table(Device device);

}  // namespace rg::bench
