// FsdpAdamW (see nn/optim/fsdp_adamw.h): segments of each unit's shard, the sharded update,
// and the gradient shards' global norm and scaling.
#include "nn/optim/fsdp_adamw.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "dist/buffer_math.h"
#include "nn/optim/moment_pieces.h"
#include "nn/optim/shard_norm.h"

namespace rg::optim {

FsdpAdamW::FsdpAdamW(nn::FullyShardedDataParallel& fsdp, AdamWOptions opts)
    : FsdpAdamW(fsdp, {ParamGroup{fsdp.params(), std::nullopt}}, opts) {}

FsdpAdamW::FsdpAdamW(nn::FullyShardedDataParallel& fsdp, std::vector<ParamGroup> groups,
                     AdamWOptions opts)
    : Optimizer(std::move(groups), opts.lr, "FsdpAdamW"), options(opts), fsdp_(fsdp) {
  RG_CHECK(opts.beta1 >= 0 && opts.beta1 < 1 && opts.beta2 >= 0 && opts.beta2 < 1,
           "FsdpAdamW: betas must be in [0, 1), got (", opts.beta1, ", ", opts.beta2, ")");
  RG_CHECK(opts.eps >= 0 && opts.weight_decay >= 0, "FsdpAdamW: eps ", opts.eps,
           " and weight_decay ", opts.weight_decay, " must be >= 0");
  plan_segments(weight_decay_per_param());
}

std::vector<double> FsdpAdamW::weight_decay_per_param() const {
  const std::vector<Tensor>& sharded = fsdp_.params();
  std::vector<double> decay(sharded.size(), -1.0);
  for (const ParamGroup& group : groups_)
    for (const Tensor& p : group.params) {
      auto it = std::find_if(sharded.begin(), sharded.end(),
                             [&](const Tensor& q) { return q.is_same(p); });
      RG_CHECK(it != sharded.end(), "FsdpAdamW: a parameter (shape ", shape_str(p.shape()),
               ") is not one the FullyShardedDataParallel shards");
      decay[it - sharded.begin()] = group.weight_decay.value_or(options.weight_decay);
    }
  for (size_t i = 0; i < decay.size(); ++i)
    RG_CHECK(decay[i] >= 0, "FsdpAdamW: parameter '", fsdp_.names()[i],
             "' is in no parameter group");
  return decay;
}

// Each parameter's overlap with this rank's [shard_start, shard_start + shard_numel).
void FsdpAdamW::plan_segments(const std::vector<double>& weight_decays) {
  for (const nn::FsdpUnit& unit : fsdp_.units()) {
    UnitState state;
    const int64_t start = unit.shard_start, end = start + unit.shard_numel;
    for (size_t k = 0; k < unit.params.size(); ++k) {
      const int64_t begin = unit.offsets[k];
      const int64_t lo = std::max(begin, start);
      const int64_t hi = std::min(begin + fsdp_.params()[unit.params[k]].numel(), end);
      const size_t param = unit.params[k];
      if (lo < hi)
        state.segments.push_back({param, lo - begin, lo - start, hi - lo, weight_decays[param]});
    }
    states_.push_back(std::move(state));
  }
}

int64_t FsdpAdamW::shard_numel() const {
  int64_t total = 0;
  for (const nn::FsdpUnit& unit : fsdp_.units()) total += unit.shard_numel;
  return total;
}

void FsdpAdamW::step() {
  NoGradGuard no_grad;
  RG_CHECK(fsdp_.synchronized_backwards() > backwards_at_last_step_,
           "FsdpAdamW.step: no synchronised backward since the last step (the averaged "
           "gradient shards are missing); the last micro-batch must run outside no_sync");
  RG_CHECK(!fsdp_.holds_full_parameters(),
           "FsdpAdamW.step: the FullyShardedDataParallel holds its full parameters "
           "(gather_full_parameters); call reshard() first, or they would go stale");
  backwards_at_last_step_ = fsdp_.synchronized_backwards();
  options.lr = lr_;
  ++step_;
  std::vector<DecayGroup> groups;
  for (size_t u = 0; u < states_.size(); ++u) {
    const nn::FsdpUnit& unit = fsdp_.units()[u];
    UnitState& state = states_[u];
    if (state.segments.empty()) continue;
    if (!state.exp_avg.defined()) allocate_moments(u);
    for (const Segment& s : state.segments) {
      auto piece = [&](const Tensor& t) { return dist::flat_slice(t, s.shard_offset, s.length); };
      AdamWTensors set{piece(unit.shard), piece(unit.grad_shard), piece(state.exp_avg),
                       piece(state.exp_avg_sq)};
      add_to_decay_group(groups, s.weight_decay, std::move(set));
    }
  }
  for (const DecayGroup& g : groups)
    adamw_multi(g.sets, {lr_, options.beta1, options.beta2, options.eps, g.weight_decay, step_});
}

// Each rank's sum of squares over its gradient shards (f64, in unit order), all-reduced.
double FsdpAdamW::grad_norm(const std::vector<Tensor>& /*order*/) const {
  std::vector<Tensor> shards;
  for (const nn::FsdpUnit& unit : fsdp_.units())
    if (unit.grad_shard.defined() && unit.shard_numel > 0) shards.push_back(unit.grad_shard);
  return sharded_grad_norm(shards, fsdp_.group());
}

void FsdpAdamW::scale_gradients_(double scale) {
  NoGradGuard no_grad;
  for (const nn::FsdpUnit& unit : fsdp_.units())
    if (unit.grad_shard.defined()) unit.grad_shard.mul_(scale);
}

void FsdpAdamW::allocate_moments(size_t u) {
  UnitState& state = states_[u];
  state.exp_avg = zeros_like(fsdp_.units()[u].shard);
  state.exp_avg_sq = zeros_like(state.exp_avg);
  tag_optimizer_state({state.exp_avg, state.exp_avg_sq});
}

nn::StateDict FsdpAdamW::state_dict() const {
  nn::StateDict dict;
  if (step_ == 0) return dict;
  dict.insert("step", scalar_tensor(static_cast<double>(step_), DType::i64));
  for (const UnitState& state : states_)
    for (const Segment& s : state.segments) {
      auto piece = [&](const Tensor& t) { return dist::flat_slice(t, s.shard_offset, s.length); };
      dict.insert(moment_pieces::key(s.param, s.param_offset, "exp_avg"), piece(state.exp_avg));
      dict.insert(moment_pieces::key(s.param, s.param_offset, "exp_avg_sq"),
                  piece(state.exp_avg_sq));
    }
  return dict;
}

nn::StateDict FsdpAdamW::merge_state_dicts(const std::vector<nn::StateDict>& ranks) const {
  return moment_pieces::merge(ranks);
}

void FsdpAdamW::load_state_dict(const nn::StateDict& dict) {
  step_ = moment_pieces::load_step(dict, "FsdpAdamW");
  for (size_t u = 0; u < states_.size(); ++u) {
    UnitState& state = states_[u];
    state.exp_avg = state.exp_avg_sq = Tensor();
    if (step_ == 0 || state.segments.empty()) continue;
    allocate_moments(u);
    for (const Segment& s : state.segments)
      moment_pieces::load_segment(dict, {s.param, s.param_offset, s.shard_offset, s.length},
                                  state.exp_avg, state.exp_avg_sq, "FsdpAdamW");
  }
}

}  // namespace rg::optim
