// ZeroAdamW: AdamW whose state is sharded across the data-parallel ranks — ZeRO stage 1
// (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", 2020; PyTorch's ZeroRedundancyOptimizer plays the same role).
//
// It works on the buckets of a DistributedDataParallel built with zero_stage = 1: each
// bucket is a flat buffer padded to a multiple of the world size N, and after a synchronised
// backward rank r holds the averaged gradient of its slice r (elements [r n/N, (r+1) n/N))
// of every bucket. step():
//   1. for each bucket, the pieces of parameters that fall in slice r are updated with the
//      multi-tensor AdamW kernel, one call per weight decay for all buckets (gradient = the
//      bucket slice; exp_avg, exp_avg_sq = slices of this rank's state, which is 1/N of
//      AdamW's), and written into the bucket slice;
//   2. every bucket is all-gathered in place, so it holds all updated parameters;
//   3. each parameter is copied back from its bucket slot — identical bits on every rank.
// grad_norm is the global norm: each rank's sum of squares over its shards
// (rg::sum_squares_multi, one device-to-host copy), all-reduced; clip_grad_norm_ and
// step(grad_scale) scale the shards in place. The state is sharded (state_is_sharded).
// With zero_stage = 2 the gradient shards live in the buckets' shard buffers
// (BucketTransport::shard) and step 2 all-gathers into a temporary full buffer per bucket,
// freed after step 3: between steps a bucket holds only its shard.
// Semantics match AdamW when every parameter gets a gradient every step (DDP guarantees one;
// find_unused_parameters gives zeros): a single step count is kept.
#pragma once
#include "nn/ddp.h"
#include "nn/optim/adamw.h"

namespace rg::optim {

class ZeroAdamW : public Optimizer {
 public:
  // Every parameter of `groups` must be one that `ddp` reduces, and vice versa.
  ZeroAdamW(nn::DistributedDataParallel& ddp, std::vector<ParamGroup> groups,
            AdamWOptions options = {});
  ZeroAdamW(nn::DistributedDataParallel& ddp, AdamWOptions options = {});
  // Collective: every rank calls it after the same synchronised backward.
  void step() override;
  using Optimizer::step;  // step(grad_scale): the shards scaled in place, then step()
  // Collective. The global L2 norm of the averaged gradient shards, without clipping (the
  // order is not used: the sums run over the shards). clip_grad_norm_ (the base class's)
  // scales the shards so that it is at most max_norm.
  double grad_norm(const std::vector<Tensor>& order) const override;
  using Optimizer::grad_norm;
  // Not collective: multiplies this rank's averaged gradient shards by scale.
  void scale_gradients_(double scale) override;
  // Elements of optimizer state per moment on this rank (sum of its bucket slices).
  int64_t shard_numel() const;
  int64_t steps() const { return step_; }
  // A sharded checkpoint: this rank's pieces of the moments, keyed by parameter and element
  // offset so that they do not depend on the world size or the buckets
  // (nn/optim/moment_pieces.h; FsdpAdamW at ZeRO-3 reads and writes the same): "step" and
  // "piece.{param}.{offset}.exp_avg" / ".exp_avg_sq" (param: index in the DDP's parameters,
  // offset: first element in the flattened parameter). The union of every rank's dict
  // (merge_state_dicts) describes the whole state.
  nn::StateDict state_dict() const override;
  // Takes this rank's slices out of a union of pieces saved at any world size and bucket
  // layout; throws naming the parameter whose elements no piece covers.
  void load_state_dict(const nn::StateDict& dict) override;
  bool state_is_sharded() const override { return true; }
  // merge_pieces: the union of the ranks' pieces (static: it needs no optimizer).
  nn::StateDict merge_state_dicts(const std::vector<nn::StateDict>& ranks) const override;
  static nn::StateDict merge_pieces(const std::vector<nn::StateDict>& ranks);
  AdamWOptions options;

 private:
  // The part of one parameter inside this rank's slice of a bucket.
  struct Segment {
    size_t param;          // index into the reducer's parameters
    int64_t param_offset;  // first element, in the flattened parameter
    int64_t shard_offset;  // first element, from the start of the slice
    int64_t length;
    double weight_decay;
  };
  // This rank's slice of one bucket, and its optimizer state.
  struct Shard {
    size_t bucket;
    int64_t start, numel;  // in the bucket's buffer
    std::vector<Segment> segments;
    Tensor exp_avg, exp_avg_sq;
  };

  void plan_shards(const std::vector<double>& weight_decays);
  std::vector<double> weight_decay_per_param() const;
  Tensor gradient_shard(const Shard& shard) const;
  void update_shard(Shard& shard, std::vector<DecayGroup>& groups);
  void update_shards();
  Tensor gather_buffer(size_t bucket) const;
  void gather_parameters();

  nn::Reducer& reducer_;
  std::vector<Shard> shards_;
  int64_t step_ = 0;
  uint64_t launches_at_last_step_ = 0;
};

}  // namespace rg::optim
