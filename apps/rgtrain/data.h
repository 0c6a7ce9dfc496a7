// rgtrain's data: the addition task or a text/token file, split into train and held-out,
// and the data order, a pure function of (seed, step) so a resumed run sees the same batches.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "apps/rgtrain/config.h"
#include "data/addition_dataset.h"
#include "data/char_dataset.h"
#include "data/distributed_sampler.h"
#include "ringgrad.h"

namespace rgtrain {

struct Data {
  std::unique_ptr<rg::data::Dataset> train, held_out;
  const rg::data::AdditionDataset* addition = nullptr;  // held-out addition set, if any
};

// Throws UsageError naming --data when the file is missing, not a regular file, empty or
// too large.
Data make_data(const Args& a);

// The inputs and targets of examples `idx`, as [B, T] int64 tensors on `device`.
std::pair<rg::Tensor, rg::Tensor> gather(const rg::data::Dataset& ds,
                                         const std::vector<int64_t>& idx, rg::Device device);

// Rank r's examples of step s are positions [off, off + per_rank) of its
// DistributedSampler shard for epoch s / per_epoch.
class Schedule {
 public:
  Schedule(int64_t n, int64_t world, int64_t per_rank, uint64_t seed);
  int64_t epoch_of(int64_t step) const { return step / per_epoch_; }
  int64_t offset_of(int64_t step) const { return (step % per_epoch_) * per_rank_; }
  // Rank r's indices of micro-batch [begin, begin+count) within its part of step `step`.
  std::vector<int64_t> indices(int64_t rank, int64_t step, int64_t begin, int64_t count);
  // Every rank's indices of step `step`, rank 0's first.
  std::vector<int64_t> global_indices(int64_t step);
  int64_t world() const { return world_; }
  int64_t per_rank() const { return per_rank_; }
  int64_t per_epoch() const { return per_epoch_; }

 private:
  int64_t world_, per_rank_, per_epoch_ = 0;
  std::vector<rg::data::DistributedSampler> samplers_;
  std::vector<std::vector<int64_t>> cache_;
  std::vector<int64_t> cached_epoch_;
};

}  // namespace rgtrain
