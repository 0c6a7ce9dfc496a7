// rgtrain's datasets and data order; see data.h.
#include "apps/rgtrain/data.h"

#include <algorithm>

#include "apps/rgtrain/util.h"
#include "data/read_file.h"
#include "data/token_bin_dataset.h"

namespace rgtrain {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Data addition_data(const Args& a) {
  Data d;
  rg::data::AdditionConfig c;
  c.digits = a.digits;
  c.seed = a.seed;
  c.size = 20000;
  d.train = std::make_unique<rg::data::AdditionDataset>(c, rg::data::Split::train);
  auto h = std::make_unique<rg::data::AdditionDataset>(c, rg::data::Split::held_out);
  d.addition = h.get();
  d.held_out = std::move(h);
  return d;
}

}  // namespace

Data make_data(const Args& a) {
  if (a.data.empty()) return addition_data(a);
  uint64_t size = 0;
  try {
    size = rg::data::checked_file_size(a.data, "--data");
  } catch (const rg::Error& e) {
    fail(e.what());
  }
  if (size == 0) fail("--data: '", a.data, "' is empty");
  Data d;
  const int64_t T = a.context > 0 ? a.context : 64;
  if (ends_with(a.data, ".bin")) {
    const int64_t vocab = a.vocab > 0 ? a.vocab : 50257;
    d.train = std::make_unique<rg::data::TokenBinDataset>(a.data, T, vocab);
    d.held_out = std::make_unique<rg::data::TokenBinDataset>(a.data, T, vocab);
  } else {
    using rg::data::CharDataset, rg::data::TextRange;
    d.train = std::make_unique<CharDataset>(a.data, T, 0, TextRange{0, 0.9});
    d.held_out = std::make_unique<CharDataset>(a.data, T, 0, TextRange{0.9, 1});
  }
  return d;
}

std::pair<rg::Tensor, rg::Tensor> gather(const rg::data::Dataset& ds,
                                         const std::vector<int64_t>& idx, rg::Device device) {
  const int64_t T = ds.context_length(), B = int64_t(idx.size());
  std::vector<int64_t> x(size_t(B * T)), y(size_t(B * T));
  for (int64_t i = 0; i < B; ++i) {
    auto ex = ds.get(idx[size_t(i)]);
    std::copy(ex.input.begin(), ex.input.end(), x.begin() + i * T);
    std::copy(ex.target.begin(), ex.target.end(), y.begin() + i * T);
  }
  auto X = rg::from_blob(x.data(), {B, T}, rg::DType::i64);
  auto Y = rg::from_blob(y.data(), {B, T}, rg::DType::i64);
  // A device run stages the batch in pinned memory and copies it without a host wait.
  if (device != rg::kCPU)
    return {X.pin_memory().to(device, /*non_blocking=*/true),
            Y.pin_memory().to(device, /*non_blocking=*/true)};
  return {X.clone(), Y.clone()};
}

Schedule::Schedule(int64_t n, int64_t world, int64_t per_rank, uint64_t seed)
    : world_(world), per_rank_(per_rank) {
  for (int64_t r = 0; r < world; ++r) {
    rg::data::SamplerOptions o;
    o.world_size = world;
    o.rank = r;
    o.seed = seed;
    samplers_.emplace_back(n, o);
  }
  per_epoch_ = samplers_[0].num_samples() / per_rank;
  if (per_epoch_ < 1)
    fail("the dataset has ", n, " examples, fewer than one global batch (", world * per_rank, ")");
  cache_.resize(size_t(world));
  cached_epoch_.assign(size_t(world), -1);
}

std::vector<int64_t> Schedule::indices(int64_t rank, int64_t step, int64_t begin, int64_t count) {
  const int64_t e = epoch_of(step);
  auto& s = samplers_[size_t(rank)];
  if (cached_epoch_[size_t(rank)] != e) {
    s.set_epoch(e);
    cache_[size_t(rank)] = s.indices();
    cached_epoch_[size_t(rank)] = e;
  }
  auto& c = cache_[size_t(rank)];
  const int64_t off = offset_of(step) + begin;
  return {c.begin() + off, c.begin() + off + count};
}

std::vector<int64_t> Schedule::global_indices(int64_t step) {
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < world_; ++r) {
    auto part = indices(r, step, 0, per_rank_);
    idx.insert(idx.end(), part.begin(), part.end());
  }
  return idx;
}

}  // namespace rgtrain
