// cross_entropy from logits and integer targets, fused: the kernel computes per-row
// logsumexp(logits) - logits[target] without materialising log_softmax, and its backward
// writes (softmax - onehot) * dloss. Rows whose target is ignore_index count for nothing:
// mean divides by the number of counted rows (so gradient accumulation must weight
// micro-batches by that count, see docs/gradient-accumulation.md).
#include "kernels/builtin.h"
#include "ops/autocast.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(cross_entropy) per row: (softmax(logits) - onehot(target)) * dloss, by the fused
// backward kernel; ignored rows get zeros.
struct CrossEntropyDerivative {
  SavedTensor logits, targets;
  int64_t ignore_index;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor l = logits.get();
    Tensor dlogits = empty(l.shape(), l.dtype(), l.device());
    if (l.numel()) RG_KERNEL(l.device(), cross_entropy_backward)
    (dlogits, l, targets.get(), contiguous(grad), ignore_index);
    return {dlogits};
  }
};

}  // namespace

Tensor cross_entropy(const Tensor& logits_given, const Tensor& targets_in, Reduction reduction,
                     int64_t ignore_index) {
  const Tensor logits_in = autocast(AutocastOp::cross_entropy, logits_given);
  check_defined("cross_entropy", logits_in, "logits");
  check_defined("cross_entropy", targets_in, "targets");
  check_same_device("cross_entropy", logits_in, targets_in);
  RG_CHECK(is_floating(logits_in.dtype()), "cross_entropy: logits must be floating-point, got ",
           logits_in.dtype());
  RG_CHECK(targets_in.dtype() == DType::i64 || targets_in.dtype() == DType::i32,
           "cross_entropy: targets must be int64 or int32 class ids, got ", targets_in.dtype());
  RG_CHECK(logits_in.dim() >= 1, "cross_entropy: logits need a class dim, got shape ",
           shape_str(logits_in.shape()));
  Shape lead(logits_in.shape().begin(), logits_in.shape().end() - 1);
  RG_CHECK(targets_in.shape() == lead, "cross_entropy: logits of shape ",
           shape_str(logits_in.shape()), " need targets of shape ", shape_str(lead), ", got ",
           shape_str(targets_in.shape()));
  int64_t C = logits_in.size(-1);
  Tensor logits = contiguous(reshape(logits_in, {-1, C}));
  Tensor targets = contiguous(targets_in.to(DType::i64)).reshape({-1});
  int64_t N = logits.size(0);
  Tensor loss = empty({N}, logits.dtype(), logits.device());
  if (N) RG_KERNEL(logits.device(), cross_entropy)(loss, logits.detach(), targets, ignore_index);
  if (needs_grad({logits}))
    record("cross_entropy", loss, {logits},
           CrossEntropyDerivative{SavedTensor(logits, "cross_entropy"),
                                  SavedTensor(targets, "cross_entropy"), ignore_index});
  switch (reduction) {
    case Reduction::none:
      return reshape(loss, lead);
    case Reduction::sum:
      return sum(loss);
    case Reduction::mean: {
      Tensor counted =
          sum(ne(targets, scalar_tensor(double(ignore_index), DType::i64, targets.device())));
      return div(sum(loss), counted.to(loss.dtype()));
    }
  }
  return loss;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  RG_CHECK(input.shape() == target.shape(), "mse_loss: input of shape ", shape_str(input.shape()),
           " and target of shape ", shape_str(target.shape()), " differ");
  Tensor sq = square(sub(input, target));
  if (reduction == Reduction::none) return sq;
  return reduction == Reduction::sum ? sum(sq) : mean(sq);
}

}  // namespace rg
