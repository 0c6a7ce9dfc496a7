// The global L2 norm of gradients sharded over a process group's ranks (ZeroAdamW's
// ZeRO-1/2 shards, FsdpAdamW's ZeRO-3 unit shards): each rank's sums of squares in f64, one
// multi-tensor reduction per dtype (rg::sum_squares_multi), added on the host in shard order,
// then all-reduced. Deterministic, and the same on every rank. Collective: every rank calls
// it, with its own shards (possibly none).
#pragma once
#include <vector>

#include "core/tensor.h"
#include "dist/process_group.h"

namespace rg::optim {

double sharded_grad_norm(const std::vector<Tensor>& shards, dist::ProcessGroup& group);

}  // namespace rg::optim
