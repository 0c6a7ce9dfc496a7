// Join: data-parallel training when ranks have different numbers of batches (PyTorch's
// torch.distributed.algorithms.Join, DDP's join()).
//
// At the start of every optimizer step each rank calls step(): the ranks exchange "I still
// have data" and their sample counts (one small all-gather, like PyTorch's per-iteration
// join all-reduce). A rank that has run out calls step_joined() instead and from then on
// shadows every step: shadow_backward() all-reduces zero gradients through the same buckets
// in the same order, so the collectives line up and nobody hangs, and it receives the
// average and applies the same optimizer step, so the replicas stay identical. The loop
// ends when a step reports that every rank has joined.
//
//   rg::nn::Join join(ddp);
//   for (int64_t t = 0;; ++t) {
//     rg::nn::JoinStep step = t < my_batches ? join.step(count_targets(y[t])) : join.step_joined();
//     if (step.all_joined) break;
//     optimizer.zero_grad();
//     if (step.joined)
//       join.shadow_backward();
//     else
//       micro_batch_cross_entropy(ddp.forward(x[t]), y[t], step.loss_denominator()).backward();
//     optimizer.step();     // on every rank, joined or not (clipping too)
//   }
//
// The average: a step's gradient is the mean over the samples actually seen in that step on
// all ranks, (sum of the gradients of the seen samples) / G, with G the sum of the counts
// the ranks with data passed to step(). It equals one process training on the union of the
// step's batches. As everywhere in ringgrad, each rank weights its SUM loss by
// 1 / loss_denominator() = world / G, the reducer divides by the world size, and joined
// ranks add zeros. PyTorch instead averages per-rank losses: over the initial world size
// (divide_by_initial_world_size = True, its default: joined ranks count as zero
// gradients) or over the ranks still active (False); neither weights by samples.
//
// Accumulation: a step may hold any number of micro-batches on each rank (all but the last
// under no_sync). Each step needs exactly one synchronised backward per rank with data and
// one shadow_backward() per joined rank; anything else is an rg::Error at the next step.
// While a Join lives, DDP broadcasts buffers once per step (from the lowest rank with data)
// instead of at every forward. Misuse (backward on a joined rank, data after joining)
// throws an rg::Error and aborts the group, so the other ranks fail at once too.
#pragma once
#include <cstdint>
#include <string>

#include "nn/ddp.h"

namespace rg::nn {

struct JoinStep {
  bool all_joined = false;  // every rank has run out of data: leave the loop
  bool joined = false;      // this rank has run out: shadow_backward() instead of backward
  int active_ranks = 0;     // ranks with data in this step
  int64_t samples = 0;      // G: this step's samples over those ranks
  int world = 1;
  // What each rank divides its summed loss by: G / world (the reducer divides by world).
  double loss_denominator() const { return static_cast<double>(samples) / world; }
};

class Join {
 public:
  explicit Join(DistributedDataParallel& ddp);
  ~Join();  // DDP back to ordinary per-forward bookkeeping
  Join(const Join&) = delete;
  Join& operator=(const Join&) = delete;

  // Collective: every rank calls one of them once per step, before the step's forward.
  JoinStep step(int64_t samples);  // this rank has a batch counting `samples` (>= 0)
  JoinStep step_joined();          // this rank has run out of data, for good
  // On a joined rank, in place of the step's backward.
  void shadow_backward();

 private:
  JoinStep exchange(bool has_data, int64_t samples);
  void check_last_step_synchronized();
  [[noreturn]] void fail(const std::string& message);

  DistributedDataParallel& ddp_;
  int64_t steps_ = 0;       // exchanges so far
  int64_t joined_at_ = -1;  // step at which this rank joined, -1 while it has data
  bool step_open_ = false;  // the last exchange began a step (not every rank joined)
  uint64_t backwards_at_step_start_ = 0;
};

}  // namespace rg::nn
