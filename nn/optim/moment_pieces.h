// The checkpoint format of the sharded AdamW optimizers (ZeroAdamW at ZeRO-1/2, FsdpAdamW at
// ZeRO-3). Each rank saves the pieces of AdamW's moments it owns, named by parameter and
// first element: "step" and "piece.{param}.{offset}.exp_avg" / ".exp_avg_sq" (param: index
// in the module's parameters(), offset: first element in the flattened parameter). Those
// names know nothing of the world size, the buckets or the units, so a run at world M (and
// at any of the stages) loads the union of a run's N dicts: each of its segments (a piece of
// one parameter inside this rank's shard) is filled from the saved pieces that overlap it,
// and every element must be covered.
#pragma once
#include <string>
#include <vector>

#include "nn/state_dict.h"

namespace rg::optim::moment_pieces {

std::string key(size_t param, int64_t offset, const std::string& moment);
// The union of the ranks' dicts.
nn::StateDict merge(const std::vector<nn::StateDict>& ranks);
// The saved "step" (0 without one); throws naming `who` when it is not a step count.
int64_t load_step(const nn::StateDict& dict, const char* who);
// One segment: elements [param_offset, param_offset + length) of parameter `param` go to
// [shard_offset, shard_offset + length) of exp_avg and exp_avg_sq, from every saved piece
// that overlaps them. Throws naming `who`, the moment, the parameter and the elements no piece
// covers (each moment is counted on its own: a missing exp_avg_sq piece is seen too).
struct Segment {
  size_t param;
  int64_t param_offset, shard_offset, length;
};
void load_segment(const nn::StateDict& dict, const Segment& segment, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const char* who);

}  // namespace rg::optim::moment_pieces
