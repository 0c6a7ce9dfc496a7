// embedding: rows of weight [V, D] gathered at integer indices [...] -> [..., D].
// Backward scatter-adds the output gradient rows into a zero [V, D] gradient.
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "ops/record.h"

namespace rg {

namespace {

// d(embedding): the output gradient's rows scatter-added into a zero [V, D] gradient.
struct EmbeddingDerivative {
  SavedTensor indices;
  int64_t vocab, dim;
  std::vector<Tensor> operator()(const Tensor& grad) const {
    Tensor idx = indices.get();
    Tensor gw = zeros({vocab, dim}, grad.dtype(), grad.device());
    if (idx.numel())
      RG_KERNEL(grad.device(), embedding_backward)(gw, contiguous(reshape(grad, {-1, dim})), idx);
    return {gw};
  }
};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices_in) {
  check_defined("embedding", weight, "weight");
  check_defined("embedding", indices_in, "indices");
  RG_CHECK(weight.dim() == 2, "embedding: weight must be 2-D [vocab, dim], got shape ",
           shape_str(weight.shape()));
  RG_CHECK(indices_in.dtype() == DType::i64 || indices_in.dtype() == DType::i32,
           "embedding: indices must be int64 or int32, got ", indices_in.dtype());
  check_same_device("embedding", weight, indices_in);
  int64_t V = weight.size(0), D = weight.size(1);
  Tensor indices = contiguous(indices_in.to(DType::i64)).reshape({-1});
  Tensor w = contiguous(weight);
  Tensor out = empty({indices.numel(), D}, weight.dtype(), weight.device());
  if (out.numel() || indices.numel())
    RG_KERNEL(weight.device(), embedding)(out, w.detach(), indices);
  Shape out_shape = indices_in.shape();
  out_shape.push_back(D);
  if (needs_grad({w}))
    record("embedding", out, {w}, EmbeddingDerivative{SavedTensor(indices, "embedding"), V, D});
  return view(out, out_shape);
}

}  // namespace rg
