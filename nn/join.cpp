// Join: the per-step exchange of "still have data" and sample counts, shadowing and its
// checks (see nn/join.h).
#include "nn/join.h"

#include <vector>

#include "ops/ops.h"

namespace rg::nn {

Join::Join(DistributedDataParallel& ddp) : ddp_(ddp) {
  RG_CHECK(!ddp_.join_active(), "Join: this DistributedDataParallel already has an active Join");
  RG_CHECK(ddp_.reducer().zero_stage() == 0, "Join: zero_stage ", ddp_.reducer().zero_stage(),
           " is not supported with Join yet (a joined rank would have to shadow the "
           "reduce-scatter and the sharded step; untested)");
  ddp_.set_join_active(true);
}

Join::~Join() {
  ddp_.set_join_active(false);
  ddp_.reducer().set_joined(false);
}

JoinStep Join::step(int64_t samples) {
  if (joined_at_ >= 0)
    fail(str("Join: rank ", ddp_.group().rank(), " joined (ran out of data) at step ", joined_at_,
             " and cannot bring data back at step ", steps_,
             "; a joined rank calls step_joined() until every rank has joined"));
  if (samples < 0)
    fail(str("Join: rank ", ddp_.group().rank(), " passed ", samples, " samples at step ", steps_,
             "; a count of samples is >= 0"));
  return exchange(true, samples);
}

JoinStep Join::step_joined() {
  if (joined_at_ < 0) {
    joined_at_ = steps_;
    ddp_.reducer().set_joined(true);
  }
  return exchange(false, 0);
}

void Join::shadow_backward() {
  if (joined_at_ < 0 || !step_open_)
    fail(str("Join: shadow_backward on rank ", ddp_.group().rank(), " at step ", steps_ - 1,
             ", which ", joined_at_ < 0 ? "still has data" : "every rank has left",
             "; only a rank that called step_joined() shadows, once per step"));
  ddp_.reducer().shadow_backward();
}

// One all-gather of (has data, samples) per rank; summed in rank order, so every rank gets
// the same numbers. The step's bookkeeping (buffers, consistency check) follows, once.
JoinStep Join::exchange(bool has_data, int64_t samples) {
  check_last_step_synchronized();
  dist::ProcessGroup& group = ddp_.group();
  Tensor mine = tensor(std::vector<int64_t>{has_data ? 1 : 0, samples});
  Tensor all = empty({2 * static_cast<int64_t>(group.size())}, DType::i64);
  group.allgather(all, mine)->wait();
  JoinStep step;
  step.world = group.size();
  step.joined = !has_data;
  int first_active = -1;
  for (int r = 0; r < group.size(); ++r) {
    if (!all.data<int64_t>()[2 * r]) continue;
    if (first_active < 0) first_active = r;
    ++step.active_ranks;
    step.samples += all.data<int64_t>()[2 * r + 1];
  }
  step.all_joined = step.active_ranks == 0;
  ++steps_;
  step_open_ = !step.all_joined;
  if (step_open_) ddp_.synchronize_step_state(first_active);
  if (step.all_joined) ddp_.reducer().set_joined(false);  // back to ordinary training
  backwards_at_step_start_ = ddp_.reducer().synchronized_backwards();
  return step;
}

void Join::check_last_step_synchronized() {
  if (!step_open_) return;
  uint64_t done = ddp_.reducer().synchronized_backwards() - backwards_at_step_start_;
  if (done == 1) return;
  bool was_joined = joined_at_ >= 0 && joined_at_ < steps_;
  fail(str("Join: rank ", ddp_.group().rank(), " did ", done, " synchronised backwards in step ",
           steps_ - 1, "; each step needs exactly one per rank: ",
           was_joined ? "shadow_backward() on a joined rank"
                      : "one backward outside no_sync on a rank with data (earlier "
                        "micro-batches under no_sync)"));
}

void Join::fail(const std::string& message) {
  ddp_.group().abort(message);  // the other ranks fail now, naming this rank
  RG_FAIL(message);
}

}  // namespace rg::nn
