// FsdpAdamW: AdamW over the parameter shards of a FullyShardedDataParallel (ZeRO stage 3,
// nn/fsdp.h). After a synchronised backward every unit holds, on rank r, its master
// parameter shard and the averaged gradient of the same elements; step() runs the
// multi-tensor AdamW kernel on those shards only, one call per weight decay, with moments
// that are shards too (1/N of AdamW's state per rank). Nothing is gathered here: the next
// forward's all-gather reads the updated shards.
// Each unit's shard is cut at its parameters' boundaries into segments (the padding at the
// end of a flat buffer is never updated), so each piece takes its parameter's weight decay.
// grad_norm is the global norm: each rank's sum of squares over its gradient shards (f64),
// all-reduced; clip_grad_norm_ and step(grad_scale) scale the shards in place.
#pragma once
#include "nn/fsdp.h"
#include "nn/optim/adamw.h"

namespace rg::optim {

class FsdpAdamW : public Optimizer {
 public:
  // `groups` must hold exactly the FSDP's parameters (for their weight decays).
  FsdpAdamW(nn::FullyShardedDataParallel& fsdp, std::vector<ParamGroup> groups,
            AdamWOptions options = {});
  FsdpAdamW(nn::FullyShardedDataParallel& fsdp, AdamWOptions options = {});
  // Collective only through grad_norm; every rank calls it after the same synchronised backward.
  void step() override;
  using Optimizer::step;
  double grad_norm(const std::vector<Tensor>& order) const override;  // collective
  using Optimizer::grad_norm;
  void scale_gradients_(double scale) override;
  // Elements of optimizer state per moment on this rank (the units' shards).
  int64_t shard_numel() const;
  int64_t steps() const { return step_; }
  // A sharded checkpoint in ZeroAdamW's format (nn/optim/moment_pieces.h): this rank's
  // pieces of the moments keyed by parameter (index in the FSDP's params(), the module's
  // parameters() order) and element offset, so that it loads at any world size and from (or
  // into) a ZeRO-1/2 run of the same model.
  nn::StateDict state_dict() const override;
  void load_state_dict(const nn::StateDict& dict) override;
  bool state_is_sharded() const override { return true; }
  nn::StateDict merge_state_dicts(const std::vector<nn::StateDict>& ranks) const override;
  AdamWOptions options;

 private:
  struct Segment {         // the part of one parameter inside this rank's shard of its unit
    size_t param;          // index into the FSDP's params()
    int64_t param_offset;  // first element, in the flattened parameter
    int64_t shard_offset, length;
    double weight_decay;
  };
  struct UnitState {
    std::vector<Segment> segments;
    Tensor exp_avg, exp_avg_sq;
  };
  void plan_segments(const std::vector<double>& weight_decays);
  void allocate_moments(size_t unit);
  std::vector<double> weight_decay_per_param() const;

  nn::FullyShardedDataParallel& fsdp_;
  std::vector<UnitState> states_;  // per unit
  int64_t step_ = 0;
  uint64_t backwards_at_last_step_ = 0;
};

}  // namespace rg::optim
