// ZeroAdamW's sharded checkpoint (see nn/optim/zero_adamw.h), in the pieces format of
// nn/optim/moment_pieces.h: each segment (a piece of a parameter inside this rank's slice of
// a bucket) is saved as a piece, and filled from the saved pieces that overlap it.
#include "dist/buffer_math.h"
#include "nn/optim/moment_pieces.h"
#include "nn/optim/zero_adamw.h"

namespace rg::optim {

nn::StateDict ZeroAdamW::state_dict() const {
  nn::StateDict dict;
  if (step_ == 0) return dict;
  dict.insert("step", scalar_tensor(static_cast<double>(step_), DType::i64));
  for (const Shard& shard : shards_)
    for (const Segment& s : shard.segments) {
      auto piece = [&](const Tensor& moment) {
        return dist::flat_slice(moment, s.shard_offset, s.length);
      };
      dict.insert(moment_pieces::key(s.param, s.param_offset, "exp_avg"), piece(shard.exp_avg));
      dict.insert(moment_pieces::key(s.param, s.param_offset, "exp_avg_sq"),
                  piece(shard.exp_avg_sq));
    }
  return dict;
}

nn::StateDict ZeroAdamW::merge_state_dicts(const std::vector<nn::StateDict>& ranks) const {
  return merge_pieces(ranks);
}

nn::StateDict ZeroAdamW::merge_pieces(const std::vector<nn::StateDict>& ranks) {
  return moment_pieces::merge(ranks);
}

void ZeroAdamW::load_state_dict(const nn::StateDict& dict) {
  step_ = moment_pieces::load_step(dict, "ZeroAdamW");
  for (Shard& shard : shards_) {
    shard.exp_avg = shard.exp_avg_sq = Tensor();
    if (step_ == 0) continue;
    shard.exp_avg = zeros_like(gradient_shard(shard));
    shard.exp_avg_sq = zeros_like(shard.exp_avg);
    tag_optimizer_state({shard.exp_avg, shard.exp_avg_sq});
    for (const Segment& s : shard.segments)
      moment_pieces::load_segment(dict, {s.param, s.param_offset, s.shard_offset, s.length},
                                  shard.exp_avg, shard.exp_avg_sq, "ZeroAdamW");
  }
}

}  // namespace rg::optim
