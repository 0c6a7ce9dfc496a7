// The sharded optimizers' checkpoint pieces; see nn/optim/moment_pieces.h.
#include "nn/optim/moment_pieces.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "dist/buffer_math.h"

namespace rg::optim::moment_pieces {

namespace {

struct PieceKey {
  size_t param;
  int64_t offset;
  std::string moment;  // "exp_avg" or "exp_avg_sq"
};

std::optional<PieceKey> parse_key(const std::string& key) {
  unsigned long long param = 0;
  long long offset = 0;
  char moment[16] = {};
  if (std::sscanf(key.c_str(), "piece.%llu.%lld.%15s", &param, &offset, moment) != 3)
    return std::nullopt;
  return PieceKey{static_cast<size_t>(param), static_cast<int64_t>(offset), moment};
}

}  // namespace

std::string key(size_t param, int64_t offset, const std::string& moment) {
  return "piece." + std::to_string(param) + "." + std::to_string(offset) + "." + moment;
}

nn::StateDict merge(const std::vector<nn::StateDict>& ranks) {
  nn::StateDict merged;
  for (const nn::StateDict& rank : ranks)
    for (const auto& [name, tensor] : rank) merged.insert(name, tensor);
  return merged;
}

int64_t load_step(const nn::StateDict& dict, const char* who) {
  const Tensor* step = dict.find("step");
  if (!step) return 0;
  const double value = step->numel() == 1 ? step->item() : -1;
  RG_CHECK(std::isfinite(value) && value >= 0 && value <= 9e15 && value == std::floor(value), who,
           ".load_state_dict: 'step' is not a step count (shape ", shape_str(step->shape()), ")");
  return static_cast<int64_t>(value);
}

// Copies the overlap of every saved piece of the segment's parameter into the segment.
void load_segment(const nn::StateDict& dict, const Segment& s, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const char* who) {
  int64_t covered[2] = {0, 0};  // elements of exp_avg and of exp_avg_sq
  for (const auto& [name, tensor] : dict) {
    std::optional<PieceKey> piece_key = parse_key(name);
    if (!piece_key || piece_key->param != s.param) continue;
    RG_CHECK(piece_key->moment == "exp_avg" || piece_key->moment == "exp_avg_sq", who,
             ".load_state_dict: unknown entry '", name, "'");
    const Tensor& moment = piece_key->moment == "exp_avg" ? exp_avg : exp_avg_sq;
    RG_CHECK(is_floating(tensor.dtype()), who, ".load_state_dict: '", name, "' has dtype ",
             dtype_name(tensor.dtype()), ", the moments are ", dtype_name(moment.dtype()));
    Tensor piece = tensor.detach().to(moment.device(), moment.dtype()).contiguous().reshape({-1});
    int64_t lo = std::max(piece_key->offset, s.param_offset);
    int64_t hi = std::min(piece_key->offset + piece.numel(), s.param_offset + s.length);
    if (lo >= hi) continue;
    dist::copy_buffer(dist::flat_slice(moment, s.shard_offset + lo - s.param_offset, hi - lo),
                      dist::flat_slice(piece, lo - piece_key->offset, hi - lo));
    covered[piece_key->moment == "exp_avg" ? 0 : 1] += hi - lo;
  }
  const char* moments[2] = {"exp_avg", "exp_avg_sq"};
  for (int m = 0; m < 2; ++m)
    RG_CHECK(covered[m] == s.length, who, ".load_state_dict: the saved ", moments[m],
             " pieces cover ", covered[m], " of the ", s.length, " elements from ", s.param_offset,
             " of parameter ", s.param,
             " (a rank's state dict is missing from the merge, or a piece was renamed?)");
}

}  // namespace rg::optim::moment_pieces
