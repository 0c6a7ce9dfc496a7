// ZeroAdamW (see nn/optim/zero_adamw.h): shard planning over the DDP buckets, the sharded
// update, the in-place all-gather, and the gradient shards' global norm and scaling (the
// state dict is in zero_adamw_state.cpp).
#include "nn/optim/zero_adamw.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "core/memory_accounting.h"
#include "core/shareable_host_memory.h"
#include "dist/buffer_math.h"
#include "kernels/builtin.h"
#include "nn/optim/shard_norm.h"

namespace rg::optim {

namespace {
Tensor flat(const Tensor& t) { return t.detach().reshape({-1}); }
}  // namespace

ZeroAdamW::ZeroAdamW(nn::DistributedDataParallel& ddp, AdamWOptions opts)
    : ZeroAdamW(ddp, {ParamGroup{ddp.reducer().params(), std::nullopt}}, opts) {}

ZeroAdamW::ZeroAdamW(nn::DistributedDataParallel& ddp, std::vector<ParamGroup> groups,
                     AdamWOptions opts)
    : Optimizer(std::move(groups), opts.lr, "ZeroAdamW"), options(opts), reducer_(ddp.reducer()) {
  RG_CHECK(reducer_.zero_stage() == 1 || reducer_.zero_stage() == 2,
           "ZeroAdamW: the DistributedDataParallel has zero_stage ", reducer_.zero_stage(),
           "; construct it with DDPOptions::zero_stage = 1 or 2");
  RG_CHECK(opts.beta1 >= 0 && opts.beta1 < 1 && opts.beta2 >= 0 && opts.beta2 < 1,
           "ZeroAdamW: betas must be in [0, 1), got (", opts.beta1, ", ", opts.beta2, ")");
  RG_CHECK(opts.eps >= 0 && opts.weight_decay >= 0, "ZeroAdamW: eps ", opts.eps,
           " and weight_decay ", opts.weight_decay, " must be >= 0");
  for (const Tensor& p : reducer_.params())
    RG_CHECK(p.dtype() == DType::f32 || p.dtype() == DType::f64,
             "ZeroAdamW: a parameter has dtype ", p.dtype(),
             "; the fused update takes float32 or float64");
  plan_shards(weight_decay_per_param());
}

// The weight decay of each reduced parameter, from the group that holds it.
std::vector<double> ZeroAdamW::weight_decay_per_param() const {
  const std::vector<Tensor>& reduced = reducer_.params();
  std::vector<double> decay(reduced.size(), -1.0);
  size_t grouped = 0;
  for (const ParamGroup& group : groups_)
    for (const Tensor& p : group.params) {
      auto it = std::find_if(reduced.begin(), reduced.end(),
                             [&](const Tensor& r) { return r.is_same(p); });
      RG_CHECK(it != reduced.end(), "ZeroAdamW: parameter ", grouped, " (shape ",
               shape_str(p.shape()), ") is not one the DistributedDataParallel reduces");
      decay[it - reduced.begin()] = group.weight_decay.value_or(options.weight_decay);
      ++grouped;
    }
  for (size_t i = 0; i < decay.size(); ++i)
    RG_CHECK(decay[i] >= 0, "ZeroAdamW: reduced parameter ", i, " (shape ",
             shape_str(reduced[i].shape()), ") is in no parameter group");
  return decay;
}

// Rank r's slice of every bucket, cut at the parameters' boundaries (padding excluded).
void ZeroAdamW::plan_shards(const std::vector<double>& weight_decays) {
  const dist::BucketTransport& transport = reducer_.transport();
  const int world = reducer_.group().size(), rank = reducer_.group().rank();
  std::vector<std::vector<size_t>> layout = transport.assignment();
  for (size_t b = 0; b < layout.size(); ++b) {
    Shard shard{b, 0, transport.bucket_numel(b) / world, {}, {}, {}};
    shard.start = rank * shard.numel;
    for (size_t i : layout[b]) {
      int64_t begin = transport.offset_in_bucket(i);
      int64_t lo = std::max(begin, shard.start);
      int64_t hi = std::min(begin + reducer_.params()[i].numel(), shard.start + shard.numel);
      if (lo < hi)
        shard.segments.push_back({i, lo - begin, lo - shard.start, hi - lo, weight_decays[i]});
    }
    shards_.push_back(std::move(shard));
  }
}

int64_t ZeroAdamW::shard_numel() const {
  int64_t total = 0;
  for (const Shard& shard : shards_) total += shard.numel;
  return total;
}

// Stage 1: a slice of the bucket's buffer; stage 2: the bucket's own shard buffer.
Tensor ZeroAdamW::gradient_shard(const Shard& shard) const {
  return reducer_.transport().shard(shard.bucket);
}

void ZeroAdamW::step() {
  NoGradGuard no_grad;
  uint64_t launches = reducer_.transport().stats().buckets_launched;
  RG_CHECK(launches > launches_at_last_step_,
           "ZeroAdamW.step: no synchronised backward since the last step (the averaged "
           "gradient shards are missing); the last micro-batch must run outside no_sync");
  launches_at_last_step_ = launches;
  options.lr = lr_;
  ++step_;
  update_shards();
  gather_parameters();
}

// Each parameter piece of the slice joins the multi-tensor AdamW call of its weight decay.
void ZeroAdamW::update_shard(Shard& shard, std::vector<DecayGroup>& groups) {
  Tensor gradient = gradient_shard(shard);
  if (!shard.exp_avg.defined()) {
    shard.exp_avg = zeros_like(gradient);
    shard.exp_avg_sq = zeros_like(gradient);
    tag_optimizer_state({shard.exp_avg, shard.exp_avg_sq});
  }
  for (const Segment& s : shard.segments) {
    AdamWTensors set{dist::flat_slice(flat(reducer_.params()[s.param]), s.param_offset, s.length),
                     dist::flat_slice(gradient, s.shard_offset, s.length),
                     dist::flat_slice(shard.exp_avg, s.shard_offset, s.length),
                     dist::flat_slice(shard.exp_avg_sq, s.shard_offset, s.length)};
    add_to_decay_group(groups, s.weight_decay, std::move(set));
  }
}

// One multi-tensor AdamW call per weight decay (and dtype); each updated piece is then
// written into its gradient slice of the bucket, which the all-gather sends.
void ZeroAdamW::update_shards() {
  std::vector<DecayGroup> groups;
  for (Shard& shard : shards_) update_shard(shard, groups);
  for (const DecayGroup& g : groups) {
    AdamWArgs args{lr_, options.beta1, options.beta2, options.eps, g.weight_decay, step_};
    adamw_multi(g.sets, args);
    for (const AdamWTensors& set : g.sets) dist::copy_buffer(set.grad, set.param);
  }
}

// Where bucket b is all-gathered: its own buffer in place (stage 1), or a temporary full
// buffer (stage 2, whose bucket keeps only its shard), freed once the parameters are copied.
Tensor ZeroAdamW::gather_buffer(size_t b) const {
  const dist::BucketTransport& transport = reducer_.transport();
  if (transport.has_buffer(b)) return transport.buffer(b);
  const Tensor& shard = transport.shard(b);
  Tensor full = [&] {
    ShareableAllocations shared;  // peers of this host may map it in the all-gather
    return empty({transport.bucket_numel(b)}, shard.dtype(), shard.device());
  }();
  tag_memory(*full.storage(), MemoryCategory::buckets);
  return full;
}

// Every bucket all-gathered (all launched, then waited), then copied back.
void ZeroAdamW::gather_parameters() {
  const dist::BucketTransport& transport = reducer_.transport();
  std::vector<Tensor> full;
  std::vector<std::shared_ptr<dist::Work>> works;
  for (const Shard& shard : shards_) {
    full.push_back(gather_buffer(shard.bucket));
    works.push_back(reducer_.group().allgather(full.back(), gradient_shard(shard)));
  }
  for (auto& work : works) work->wait();
  const std::vector<Tensor>& params = reducer_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& bucket = full[transport.bucket_of(i)];
    dist::copy_buffer(flat(params[i]),
                      dist::flat_slice(bucket, transport.offset_in_bucket(i), params[i].numel()));
    params[i].bump_version();
  }
}

// Each rank's sum of squares over its slices (in f64), all-reduced (bit-identical everywhere).
// The slices share their buckets' dtype: one multi-tensor reduction per dtype (usually one).
double ZeroAdamW::grad_norm(const std::vector<Tensor>& /*order*/) const {
  std::vector<Tensor> gradients;
  for (const Shard& shard : shards_) gradients.push_back(gradient_shard(shard));
  return sharded_grad_norm(gradients, reducer_.group());
}

void ZeroAdamW::scale_gradients_(double scale) {
  NoGradGuard no_grad;
  for (const Shard& shard : shards_) gradient_shard(shard).mul_(scale);
}

}  // namespace rg::optim
