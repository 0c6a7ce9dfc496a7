// Greedy evaluation of a language model on the addition task (data/addition_dataset.h):
// batched greedy decoding of the answers and their exact-match accuracy. It lives in nn/
// because it runs a model (ops, no-grad mode); data/ only describes the problems.
#pragma once
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "data/addition_dataset.h"

namespace rg::nn {

using data::AdditionDataset;

// Maps idx [B, t] (int64, on `device`) to logits [B, t, V].
using LogitsFn = std::function<Tensor(const Tensor& idx)>;

// Greedy decoding of the answers of examples `indices`, batched: starts from each prompt and
// appends the argmax token d+1 times. Returns the full sequences (prompt + answer), for
// printing with decode(). Runs without recording gradients.
std::vector<std::vector<int64_t>> greedy_complete(const AdditionDataset& dataset,
                                                  const LogitsFn& model,
                                                  const std::vector<int64_t>& indices,
                                                  Device device = kCPU);

// Fraction of the first max_examples examples (all when < 0) whose greedy answer matches
// every digit.
double exact_match_accuracy(const AdditionDataset& dataset, const LogitsFn& model,
                            int64_t batch_size = 256, int64_t max_examples = -1,
                            Device device = kCPU);

}  // namespace rg::nn
