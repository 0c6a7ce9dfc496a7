// DistributedSampler: which dataset indices this rank visits in an epoch, with PyTorch's
// torch.utils.data.DistributedSampler semantics:
//   1. order = shuffle ? permutation of [0, n) drawn from (seed, epoch) : 0, 1, ..., n-1.
//      The permutation depends only on (seed, epoch, n), so every rank computes the same one.
//   2. drop_last = false: pad `order` with its own first elements (cycling) up to
//      world_size * ceil(n / world_size), so every rank gets the same count;
//      drop_last = true: cut it to world_size * floor(n / world_size) instead.
//   3. rank r takes order[r], order[r + world_size], order[r + 2 world_size], ...
// Shards are disjoint except for the padding repeats; together they cover the dataset (or
// all but the dropped tail). Call set_epoch(e) before each epoch to reshuffle.
#pragma once
#include <cstdint>
#include <vector>

namespace rg::data {

struct SamplerOptions {
  int64_t world_size = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, SamplerOptions options = {});

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  int64_t num_samples() const { return num_samples_; }  // per rank, per epoch
  int64_t dataset_size() const { return dataset_size_; }
  const SamplerOptions& options() const { return options_; }
  std::vector<int64_t> indices() const;  // this rank's indices for the current epoch

 private:
  int64_t dataset_size_;
  SamplerOptions options_;
  int64_t epoch_ = 0;
  int64_t num_samples_;
};

// Fisher-Yates permutation of [0, n) driven by Philox(seed, epoch): deterministic across
// ranks, platforms and thread counts.
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace rg::data
