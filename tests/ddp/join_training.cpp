// Uneven-input training runs for the Join tests (see join_training.h).
#include "join_training.h"

#include <algorithm>
#include <optional>

#include "dist/threads_group.h"
#include "nn/join.h"
#include "nn/optim/clip_grad.h"

namespace rg::testing {

namespace {

using Batches = std::vector<std::pair<Tensor, Tensor>>;

int world_of(const JoinSetup& s) { return static_cast<int>(s.micro_batches.size()); }

int steps_of(const JoinSetup& s) {
  int most = 0;
  for (int n : s.micro_batches) most = std::max(most, (n + s.accum - 1) / s.accum);
  return most;
}

Batches step_batches(const JoinSetup& s, int rank, int step) {
  Batches out;
  for (int k = 0; k < micro_batches_in_step(s, rank, step); ++k)
    out.push_back(micro_batch_of(s, rank, step * s.accum + k));
  return out;
}

double counted_in(const Batches& batches) {
  double n = 0;
  for (const auto& [x, y] : batches) n += counted(y);
  return n;
}

void clip_and_step(const JoinSetup& s, nn::Module& model, optim::Optimizer& opt) {
  if (s.clip > 0) optim::clip_grad_norm_(model.parameters(), s.clip);
  opt.step();
}

// The step's micro-batches, all but the last under no_sync.
void backward_micro_batches(const JoinSetup& s, nn::DistributedDataParallel& ddp,
                            const Batches& batches, double denominator) {
  for (size_t k = 0; k < batches.size(); ++k) {
    auto guard = k + 1 < batches.size() ? ddp.no_sync() : nn::NoSyncGuard();
    ddp.pre_forward();
    loss_of(s.base, ddp.module(), batches[k].first, batches[k].second, denominator).backward();
  }
}

// Without a Join (even inputs only): the step's samples all-reduced by hand, as
// docs/gradient-accumulation.md describes.
nn::JoinStep plain_step(dist::ProcessGroup& group, int step, int steps, double samples) {
  Tensor n = tensor(std::vector<int64_t>{static_cast<int64_t>(samples)});
  group.allreduce(n)->wait();
  nn::JoinStep out;
  out.world = group.size();
  out.active_ranks = group.size();
  out.samples = n.data<int64_t>()[0];
  out.all_joined = step >= steps;
  return out;
}

}  // namespace

int micro_batches_in_step(const JoinSetup& s, int rank, int step) {
  int left = s.micro_batches[rank] - step * s.accum;
  return std::clamp(left, 0, s.accum);
}

std::pair<Tensor, Tensor> micro_batch_of(const JoinSetup& s, int rank, int m) {
  return random_batch(s.base, s.base.micro + rank, 7000 + 100 * uint64_t(rank) + uint64_t(m));
}

std::vector<Tensor> train_join_rank(const JoinSetup& s, dist::ProcessGroup& group) {
  const int rank = group.rank();
  auto model = make_model(s.base, 100 + uint64_t(rank) * 7);  // DDP broadcasts rank 0's
  nn::DDPOptions o;
  o.bucket_cap_mb = s.base.bucket_cap_mb;
  o.first_bucket_cap_mb = s.base.first_bucket_cap_mb;
  o.gradient_as_bucket_view = s.base.grad_view;
  o.overlap = s.base.overlap;
  nn::DistributedDataParallel ddp(model, group, o);
  auto opt = make_optimizer(s.base, model->parameters());
  std::optional<nn::Join> join;
  if (s.use_join) join.emplace(ddp);
  for (int t = 0;; ++t) {
    Batches batches = step_batches(s, rank, t);
    double samples = counted_in(batches);
    nn::JoinStep step = !join             ? plain_step(group, t, steps_of(s), samples)
                        : batches.empty() ? join->step_joined()
                                          : join->step(static_cast<int64_t>(samples));
    if (step.all_joined) break;
    opt->zero_grad();
    if (step.joined)
      join->shadow_backward();
    else
      backward_micro_batches(s, ddp, batches, step.loss_denominator());
    clip_and_step(s, *model, *opt);
  }
  std::vector<Tensor> params;
  for (auto& p : model->parameters()) params.push_back(p.detach().clone());
  return params;
}

std::vector<Tensor> train_union_reference(const JoinSetup& s) {
  auto model = make_model(s.base, 100);
  auto opt = make_optimizer(s.base, model->parameters());
  for (int t = 0; t < steps_of(s); ++t) {
    std::vector<Tensor> xs, ys;
    for (int r = 0; r < world_of(s); ++r)
      for (auto& [x, y] : step_batches(s, r, t)) {
        xs.push_back(x);
        ys.push_back(y);
      }
    Tensor y = cat(ys);
    opt->zero_grad();
    loss_of(s.base, *model, cat(xs), y, counted(y)).backward();
    clip_and_step(s, *model, *opt);
  }
  return model->parameters();
}

std::vector<std::vector<Tensor>> train_join_threads(const JoinSetup& s) {
  std::vector<std::vector<Tensor>> results(s.micro_batches.size());
  dist::Options options;
  options.timeout = std::chrono::milliseconds(20000);
  dist::run_threads(
      world_of(s),
      [&](dist::ProcessGroup& group) { results[group.rank()] = train_join_rank(s, group); },
      options);
  return results;
}

}  // namespace rg::testing
