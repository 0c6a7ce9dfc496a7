// Uneven inputs for the Join tests: ranks that hold different numbers of micro-batches,
// trained with DDP + nn::Join on thread ranks, and the single-process reference that, at
// each step, trains on the union of the batches of the ranks that still had data.
#pragma once
#include <vector>

#include "equivalence.h"

namespace rg::testing {

struct JoinSetup {
  Setup base;                      // model, dtype, optimizer, buckets; base.micro: rows of rank 0
  std::vector<int> micro_batches;  // per rank: how many micro-batches it holds in all
  int accum = 1;                   // micro-batches per step (a rank's last step may hold fewer)
  bool use_join = true;            // false: plain DDP, every rank must have the same steps
  double clip = 1.0;               // clip_grad_norm_ before each step (0: none)
};

// Micro-batches rank `rank` holds in step `step` (0 once it has run out).
int micro_batches_in_step(const JoinSetup& s, int rank, int step);
// Micro-batch m of rank r: base.micro + r rows, so ranks see different numbers of samples.
std::pair<Tensor, Tensor> micro_batch_of(const JoinSetup& s, int rank, int m);

std::vector<Tensor> train_union_reference(const JoinSetup& s);
// The body of one rank (DDP + Join, or plain DDP): its parameters after training.
std::vector<Tensor> train_join_rank(const JoinSetup& s, dist::ProcessGroup& group);
// Each rank's parameters after training (ranks run as threads of this process).
std::vector<std::vector<Tensor>> train_join_threads(const JoinSetup& s);

}  // namespace rg::testing
