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
// Within its chunk a block moves 16-byte vectors (walk_chunk): the elements before the first
// 16-byte boundary and after the last whole vector one by one. Chunk starts keep a tensor's
// misalignment (kChunk is a multiple of any vector width), so one head per tensor serves every
// chunk; a tensor whose pointers sit at different offsets from a boundary goes element by
// element (the parameter views of a flat buffer at odd offsets were all scalar before).
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
  int8_t head[kBatchTensors];  // elements before every pointer's first 16-byte boundary; -1: none
  uint8_t block_tensor[kBatchBlocks];
  int32_t block_chunk[kBatchBlocks];
};

// The elements of `itemsize` bytes before the first 16-byte boundary, the same for every
// pointer, or -1 when they differ (or a pointer is not element-aligned).
template <int Depth>
int8_t common_head(const std::array<void*, Depth>& ptrs, size_t itemsize) {
  int head = -1;
  for (int d = 0; d < Depth; ++d) {
    const size_t to_boundary = (16 - reinterpret_cast<uintptr_t>(ptrs[d]) % 16) % 16;
    if (to_boundary % itemsize != 0) return -1;
    const int mine = int(to_boundary / itemsize);
    if (d > 0 && mine != head) return -1;
    head = mine;
  }
  return int8_t(head);
}

// Runs vector(j) for each whole 16-byte vector of kN elements [j, j + kN) of a chunk of n
// elements whose first boundary is `head` elements in, and scalar(j) for the elements before
// it and after the last vector (head < 0: for all of them). Threads stride by blockDim.
template <int kN, typename Vector, typename Scalar>
__device__ inline void walk_chunk(int64_t n, int head, const Vector& vector, const Scalar& scalar) {
  int64_t rest = 0;  // where the scalar tail starts
  if (head >= 0) {
    const int64_t first = min_of(int64_t(head), n);
    if (int64_t(threadIdx.x) < first) scalar(int64_t(threadIdx.x));
    RG_UNROLL4
    for (int64_t j = first + int64_t(threadIdx.x) * kN; j + kN <= n; j += int64_t(blockDim.x) * kN)
      vector(j);
    rest = first + (n - first) / kN * kN;
  }
  for (int64_t j = rest + threadIdx.x; j < n; j += blockDim.x) scalar(j);
}

// Calls launch_batch(batch, blocks) for each batch of the chunks of tensors `ptrs` (Depth
// pointers per tensor, elements of `itemsize` bytes) of sizes `numels`; empty tensors are
// skipped.
template <int Depth, typename LaunchBatch>
void for_each_batch(const std::vector<std::array<void*, Depth>>& ptrs,
                    const std::vector<int64_t>& numels, size_t itemsize,
                    LaunchBatch&& launch_batch) {
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
        batch.head[tensors] = common_head<Depth>(ptrs[t], itemsize);
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
