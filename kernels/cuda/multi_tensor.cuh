// multi_tensor_apply for the multi-tensor kernels (adamw_multi, sum_squares_multi), after
// PyTorch's design, written for ringgrad: a list of tensors is launched as few kernels as
// possible, each taking a TensorBatch by value (kernel-argument memory, no device copy) that
// holds up to kBatchTensors tensors' pointers and sizes and a block -> (tensor, chunk) map of
// up to kBatchBlocks blocks. Block b of a launch handles elements [chunk * kChunk, +kChunk)
// of tensor block_tensor[b]. A tensor whose chunks do not all fit continues in the next
// launch. The cut depends on the sizes only (deterministic). 2048 blocks are 2^27 elements,
// so a 124M-parameter model takes one to three launches (its 148 tensors, 64 per batch);
// with 320 blocks (2.4 per H200 SM) each launch drained before the next started, and the
// multi-tensor kernels ran at 0.3-0.56x a memcpy on an H200. The struct is 13.1 KiB at
// Depth 4: over the classic 4 KiB kernel-parameter limit, within the 32 KiB one of CUDA 12.1+
// on Volta and later (nvcc refuses a kernel whose parameters do not fit).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/cuda/vec16.cuh"

namespace rg::RG_BACKEND {

constexpr int kBatchTensors = 64;
constexpr int kBatchBlocks = 2048;
constexpr int64_t kChunk = 65536;  // elements per block; a multiple of any vector width

template <int Depth>
struct TensorBatch {
  void* ptr[Depth][kBatchTensors];
  int64_t numel[kBatchTensors];
  int64_t first_slot[kBatchTensors];  // the global chunk number of the tensor's chunk 0
  bool aligned[kBatchTensors];        // every pointer of the tensor 16-byte aligned
  uint8_t block_tensor[kBatchBlocks];
  int32_t block_chunk[kBatchBlocks];
};

// Calls launch_batch(batch, blocks) for each batch of the chunks of tensors `ptrs` (Depth
// pointers per tensor) of sizes `numels`; empty tensors are skipped.
template <int Depth, typename LaunchBatch>
void for_each_batch(const std::vector<std::array<void*, Depth>>& ptrs,
                    const std::vector<int64_t>& numels, LaunchBatch&& launch_batch) {
  TensorBatch<Depth> batch{};
  int tensors = 0, blocks = 0;
  int64_t slot = 0;
  for (size_t t = 0; t < ptrs.size(); ++t) {
    const int64_t chunks = ceil_div(numels[t], kChunk);
    for (int64_t c = 0; c < chunks; ++c) {
      if (c == 0 || blocks == 0) {  // the tensor enters this batch
        for (int d = 0; d < Depth; ++d) batch.ptr[d][tensors] = ptrs[t][d];
        batch.numel[tensors] = numels[t];
        batch.first_slot[tensors] = slot;
        bool aligned = true;
        for (int d = 0; d < Depth; ++d) aligned = aligned && aligned16(ptrs[t][d]);
        batch.aligned[tensors] = aligned;
        ++tensors;
      }
      batch.block_tensor[blocks] = uint8_t(tensors - 1);
      batch.block_chunk[blocks] = int32_t(c);
      ++blocks;
      const bool last_chunk = c + 1 == chunks;
      if (blocks == kBatchBlocks || (tensors == kBatchTensors && last_chunk)) {
        launch_batch(batch, blocks);
        tensors = 0, blocks = 0;
      }
    }
    slot += chunks;
  }
  if (blocks > 0) launch_batch(batch, blocks);
}

}  // namespace rg::RG_BACKEND
