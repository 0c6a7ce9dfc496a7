// Shuffled, padded, strided shards; see distributed_sampler.h.
#include "data/distributed_sampler.h"

#include <numeric>

#include "core/error.h"
#include "core/philox.h"

namespace rg::data {

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  const uint64_t key = seed ^ (static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull);
  for (int64_t i = n - 1; i > 0; --i) {
    PhiloxOutput r = philox4x32_10(key, static_cast<uint64_t>(i));
    const uint64_t bits = static_cast<uint64_t>(r.v[0]) | (static_cast<uint64_t>(r.v[1]) << 32);
    const int64_t j = static_cast<int64_t>(bits % static_cast<uint64_t>(i + 1));  // bias < 2^-32
    std::swap(order[i], order[j]);
  }
  return order;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, SamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  RG_CHECK(dataset_size > 0, "DistributedSampler: dataset is empty");
  RG_CHECK(options.world_size > 0, "DistributedSampler: world_size must be positive, got ",
           options.world_size);
  RG_CHECK(options.rank >= 0 && options.rank < options.world_size, "DistributedSampler: rank ",
           options.rank, " out of range for world_size ", options.world_size);
  const int64_t w = options.world_size;
  num_samples_ = options.drop_last ? dataset_size / w : (dataset_size + w - 1) / w;
  RG_CHECK(num_samples_ > 0, "DistributedSampler: drop_last leaves no samples: dataset of ",
           dataset_size, " across ", w, " ranks");
}

std::vector<int64_t> DistributedSampler::indices() const {
  const int64_t n = dataset_size_, w = options_.world_size;
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = random_permutation(n, options_.seed, epoch_);
  } else {
    order.resize(n);
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t total = num_samples_ * w;
  for (int64_t i = n; i < total; ++i) order.push_back(order[i - n]);  // pad by cycling
  std::vector<int64_t> mine;
  mine.reserve(num_samples_);
  for (int64_t i = options_.rank; i < total; i += w) mine.push_back(order[i]);
  return mine;
}

}  // namespace rg::data
