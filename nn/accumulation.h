// Gradient accumulation that equals one large batch.
//
// A mean-reduced loss over a micro-batch divides by that micro-batch's count of targets.
// Scaling each micro-loss by 1/k is only right when every micro-batch counts the same
// number of targets; with uneven splits or ignore_index targets it weights tokens
// unequally. The exact recipe: weight each micro-batch's SUM loss by 1/(targets counted in
// the whole batch), so the accumulated gradient is that of the full-batch mean:
//
//   double total = count_targets(targets, ignore_index);   // whole batch (all ranks: see docs)
//   for (auto& [x, y] : zip(split_micro_batches(idx, k), split_micro_batches(targets, k)))
//     micro_batch_cross_entropy(model->forward(x), y, total, ignore_index).backward();
//   optimizer.step(); optimizer.zero_grad();
//
// docs/gradient-accumulation.md explains the arithmetic and the data-parallel case.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/ops.h"

namespace rg::nn {

// Number of entries of `targets` that are not ignore_index (integer targets).
int64_t count_targets(const Tensor& targets, int64_t ignore_index = -100);

// Splits dim 0 into k views of nearly equal size (the first batch % k get one more row,
// like torch.tensor_split); k may exceed the batch only if no micro-batch ends up empty.
std::vector<Tensor> split_micro_batches(const Tensor& batch, int64_t k);

// sum(cross_entropy(logits, targets)) / denominator, where denominator is the count of
// targets of the whole batch (count_targets), so the micro-losses sum to the batch's mean.
Tensor micro_batch_cross_entropy(const Tensor& logits, const Tensor& targets, double denominator,
                                 int64_t ignore_index = -100);
// sum((input - target)^2) / denominator, denominator = numel of the whole batch's target.
Tensor micro_batch_mse(const Tensor& input, const Tensor& target, double denominator);

}  // namespace rg::nn
