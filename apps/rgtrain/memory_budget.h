// rgtrain --memory-budget: the largest micro-batch that fits a memory budget, with the
// accumulation steps that keep the requested global batch (so the choice cannot change the
// result beyond rounding: k micro-batches give the gradient of their union).
//
// Two dry runs of a throwaway copy of the model, forward and backward on 1 and on 2 examples,
// give the peak bytes above the weights as intercept + m * slope (the intercept holds the
// gradients and the per-step temporaries, the slope one example's activations). The weights,
// the optimizer state (AdamW: 2 per weight, SGD: 1) and, under DDP, the buckets are counted
// from the parameter bytes (under --zero 3: 1/N of weights, gradients and state, plus two
// gathered blocks). The pick is the largest divisor m of the per-rank batch with
// weights + state + buckets + intercept + m * slope <= budget; under DDP, the smallest pick
// of all ranks.
#pragma once
#include <cstdint>
#include <string>

#include "apps/rgtrain/run_state.h"

namespace rgtrain {

// "2GiB", "512MiB", "1.5GB", "65536" (bytes): KiB/MiB/GiB are powers of 1024, KB/MB/GB of
// 1000. Fails naming --memory-budget and the value otherwise.
uint64_t parse_memory_budget(const std::string& text);

// Sets s.args.micro_batch for --memory-budget and prints what it chose and why (rank 0).
// Needs s.per_rank, s.data, s.vocab and s.context.
void choose_micro_batch(RunState& s);

}  // namespace rgtrain
