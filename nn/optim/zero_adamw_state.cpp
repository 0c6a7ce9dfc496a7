// ZeroAdamW's sharded checkpoint (see nn/optim/zero_adamw.h). Each rank saves the pieces of
// AdamW's moments it owns, named by (parameter, first element): "piece.{param}.{offset}.*".
// Those names know nothing of the world size or the bucket layout, so a run at world M can
// load the union of the N ranks' dicts of a run at world N: each of its segments (a piece of
// a parameter inside its slice of a bucket) is filled from the saved pieces that overlap it,
// and every element must be covered.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "dist/buffer_math.h"
#include "nn/optim/zero_adamw.h"

namespace rg::optim {

namespace {

struct PieceKey {
  size_t param;
  int64_t offset;
  std::string moment;  // "exp_avg" or "exp_avg_sq"
};

std::string piece_key(size_t param, int64_t offset, const std::string& moment) {
  return "piece." + std::to_string(param) + "." + std::to_string(offset) + "." + moment;
}

std::optional<PieceKey> parse_piece_key(const std::string& key) {
  unsigned long long param = 0;
  long long offset = 0;
  char moment[16] = {};
  if (std::sscanf(key.c_str(), "piece.%llu.%lld.%15s", &param, &offset, moment) != 3)
    return std::nullopt;
  return PieceKey{static_cast<size_t>(param), static_cast<int64_t>(offset), moment};
}

}  // namespace

nn::StateDict ZeroAdamW::state_dict() const {
  nn::StateDict dict;
  if (step_ == 0) return dict;
  dict.insert("step", scalar_tensor(static_cast<double>(step_), DType::i64));
  for (const Shard& shard : shards_)
    for (const Segment& s : shard.segments) {
      auto piece = [&](const Tensor& moment) {
        return dist::flat_slice(moment, s.shard_offset, s.length);
      };
      dict.insert(piece_key(s.param, s.param_offset, "exp_avg"), piece(shard.exp_avg));
      dict.insert(piece_key(s.param, s.param_offset, "exp_avg_sq"), piece(shard.exp_avg_sq));
    }
  return dict;
}

nn::StateDict ZeroAdamW::merge_state_dicts(const std::vector<nn::StateDict>& ranks) const {
  return merge_pieces(ranks);
}

nn::StateDict ZeroAdamW::merge_pieces(const std::vector<nn::StateDict>& ranks) {
  nn::StateDict merged;
  for (const nn::StateDict& rank : ranks)
    for (const auto& [name, tensor] : rank) merged.insert(name, tensor);
  return merged;
}

void ZeroAdamW::load_state_dict(const nn::StateDict& dict) {
  const Tensor* step = dict.find("step");
  step_ = 0;
  if (step) {
    const double value = step->numel() == 1 ? step->item() : -1;
    RG_CHECK(std::isfinite(value) && value >= 0 && value <= 9e15 && value == std::floor(value),
             "ZeroAdamW.load_state_dict: 'step' is not a step count (shape ",
             shape_str(step->shape()), ")");
    step_ = static_cast<int64_t>(value);
  }
  for (Shard& shard : shards_) {
    shard.exp_avg = shard.exp_avg_sq = Tensor();
    if (step_ == 0) continue;
    shard.exp_avg = zeros_like(gradient_shard(shard));
    shard.exp_avg_sq = zeros_like(shard.exp_avg);
    tag_optimizer_state({shard.exp_avg, shard.exp_avg_sq});
    for (const Segment& segment : shard.segments) load_segment(dict, segment, shard);
  }
}

// Copies the overlap of every saved piece of the segment's parameter into the segment.
void ZeroAdamW::load_segment(const nn::StateDict& dict, const Segment& s, Shard& shard) {
  int64_t covered = 0;  // elements, counted on exp_avg
  for (const auto& [name, tensor] : dict) {
    std::optional<PieceKey> key = parse_piece_key(name);
    if (!key || key->param != s.param) continue;
    RG_CHECK(key->moment == "exp_avg" || key->moment == "exp_avg_sq",
             "ZeroAdamW.load_state_dict: unknown entry '", name, "'");
    Tensor& moment = key->moment == "exp_avg" ? shard.exp_avg : shard.exp_avg_sq;
    RG_CHECK(is_floating(tensor.dtype()), "ZeroAdamW.load_state_dict: '", name, "' has dtype ",
             dtype_name(tensor.dtype()), ", the moments are ", dtype_name(moment.dtype()));
    Tensor piece = tensor.detach().to(moment.device(), moment.dtype()).contiguous().reshape({-1});
    int64_t lo = std::max(key->offset, s.param_offset);
    int64_t hi = std::min(key->offset + piece.numel(), s.param_offset + s.length);
    if (lo >= hi) continue;
    dist::copy_buffer(dist::flat_slice(moment, s.shard_offset + lo - s.param_offset, hi - lo),
                      dist::flat_slice(piece, lo - key->offset, hi - lo));
    if (key->moment == "exp_avg") covered += hi - lo;
  }
  RG_CHECK(covered == s.length, "ZeroAdamW.load_state_dict: the saved pieces cover ", covered,
           " of the ", s.length, " elements from ", s.param_offset, " of parameter ", s.param,
           " (a rank's state dict is missing from the merge?)");
}

}  // namespace rg::optim
