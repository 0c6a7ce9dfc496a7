// Batched greedy decoding and exact-match accuracy; see greedy_eval.h.
#include "nn/greedy_eval.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "ops/ops.h"

namespace rg::nn {

std::vector<std::vector<int64_t>> greedy_complete(const AdditionDataset& dataset,
                                                  const LogitsFn& model,
                                                  const std::vector<int64_t>& indices,
                                                  Device device) {
  NoGradGuard no_grad;
  const int64_t B = static_cast<int64_t>(indices.size());
  std::vector<std::vector<int64_t>> seqs;
  seqs.reserve(B);
  for (int64_t i : indices) seqs.push_back(dataset.prompt(dataset.problem(i)));
  if (B == 0) return seqs;
  for (int64_t step = 0; step < dataset.answer_length(); ++step) {
    const int64_t t = static_cast<int64_t>(seqs[0].size());
    std::vector<int64_t> flat;
    flat.reserve(B * t);
    for (const auto& s : seqs) flat.insert(flat.end(), s.begin(), s.end());
    Tensor idx = tensor(flat, {B, t});
    if (device != kCPU) idx = idx.to(device);
    Tensor logits = model(idx);
    RG_CHECK(logits.dim() == 3 && logits.size(0) == B && logits.size(1) == t,
             "greedy_complete: model returned logits of shape ", shape_str(logits.shape()),
             " for idx [", B, ",", t, "], expected [B,t,V]");
    const std::vector<int64_t> next = argmax(logits.select(1, t - 1), -1).to_vector<int64_t>();
    for (int64_t b = 0; b < B; ++b) seqs[b].push_back(next[b]);
  }
  return seqs;
}

double exact_match_accuracy(const AdditionDataset& dataset, const LogitsFn& model,
                            int64_t batch_size, int64_t max_examples, Device device) {
  RG_CHECK(batch_size > 0, "exact_match_accuracy: batch_size must be positive, got ", batch_size);
  const int64_t n = max_examples < 0 ? dataset.size() : std::min(max_examples, dataset.size());
  RG_CHECK(n > 0, "exact_match_accuracy: no examples to evaluate");
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += batch_size) {
    std::vector<int64_t> indices;
    for (int64_t i = start; i < std::min(n, start + batch_size); ++i) indices.push_back(i);
    const auto seqs = greedy_complete(dataset, model, indices, device);
    for (size_t k = 0; k < indices.size(); ++k) {
      const std::vector<int64_t> want = dataset.answer(dataset.problem(indices[k]));
      correct += std::equal(want.begin(), want.end(), seqs[k].begin() + dataset.prompt_length());
    }
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace rg::nn
