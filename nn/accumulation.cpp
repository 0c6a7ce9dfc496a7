// Gradient-accumulation helpers (see nn/accumulation.h).
#include "nn/accumulation.h"

#include "autograd/grad_mode.h"

namespace rg::nn {

int64_t count_targets(const Tensor& targets, int64_t ignore_index) {
  RG_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32,
           "count_targets: targets must be int64 or int32, got ", targets.dtype());
  NoGradGuard no_grad;
  Tensor ignore =
      scalar_tensor(static_cast<double>(ignore_index), targets.dtype(), targets.device());
  return static_cast<int64_t>(sum(ne(targets, ignore).to(DType::i64)).item());
}

std::vector<Tensor> split_micro_batches(const Tensor& batch, int64_t k) {
  RG_CHECK(batch.dim() >= 1, "split_micro_batches: need a batch dim, got shape ",
           shape_str(batch.shape()));
  const int64_t n = batch.size(0);
  RG_CHECK(k >= 1 && k <= n, "split_micro_batches: cannot split a batch of ", n, " rows (shape ",
           shape_str(batch.shape()), ") into ", k, " non-empty micro-batches");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t rows = n / k + (i < n % k ? 1 : 0);
    out.push_back(batch.narrow(0, start, rows));
    start += rows;
  }
  return out;
}

Tensor micro_batch_cross_entropy(const Tensor& logits, const Tensor& targets, double denominator,
                                 int64_t ignore_index) {
  RG_CHECK(denominator > 0, "micro_batch_cross_entropy: denominator must be positive, got ",
           denominator, " (does the whole batch count any targets?)");
  return cross_entropy(logits, targets, Reduction::sum, ignore_index) / denominator;
}

Tensor micro_batch_mse(const Tensor& input, const Tensor& target, double denominator) {
  RG_CHECK(denominator > 0, "micro_batch_mse: denominator must be positive, got ", denominator);
  return mse_loss(input, target, Reduction::sum) / denominator;
}

}  // namespace rg::nn
