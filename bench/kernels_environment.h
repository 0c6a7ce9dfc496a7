// bench/kernels --environment (kernels_environment.cpp): what a GPU machine offers ringgrad,
// printed before any kernel runs: the CUDA runtime and driver versions, the GPUs, and where
// cuBLAS, cuBLASLt and NCCL load from (kernels/cuda/library_search.cpp's order).
#pragma once

namespace rg::bench {

// Prints the report; returns 0 (a missing GPU or library is reported, not an error: the
// steps that need them fail with their own message).
int print_environment();

}  // namespace rg::bench
