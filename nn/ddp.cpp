// DistributedDataParallel: construction-time checks and broadcast, per-forward bookkeeping.
#include "nn/ddp.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "autograd/grad_mode.h"
#include "core/hash.h"
#include "ops/ops.h"

namespace rg::nn {

NoSyncGuard::NoSyncGuard(Reducer* reducer) : reducer_(reducer) {
  previous_ = reducer_->require_sync();
  reducer_->set_require_sync(false);
}
NoSyncGuard::NoSyncGuard(NoSyncGuard&& other) noexcept
    : reducer_(std::exchange(other.reducer_, nullptr)), previous_(other.previous_) {}
NoSyncGuard& NoSyncGuard::operator=(NoSyncGuard&& other) noexcept {
  if (this != &other) {
    if (reducer_) reducer_->set_require_sync(previous_);
    reducer_ = std::exchange(other.reducer_, nullptr);
    previous_ = other.previous_;
  }
  return *this;
}
NoSyncGuard::~NoSyncGuard() {
  if (reducer_) reducer_->set_require_sync(previous_);
}

namespace {

// Packs a string into int64 words (8 bytes each) for all-gathering.
std::vector<int64_t> pack(const std::string& s, size_t words) {
  std::vector<int64_t> out(words, 0);
  std::memcpy(out.data(), s.data(), std::min(s.size(), words * 8));
  return out;
}

// All ranks' copies of a string, gathered through the group (lengths first, then bytes).
std::vector<std::string> allgather_strings(dist::ProcessGroup& group, const std::string& mine) {
  int n = group.size();
  Tensor len_in = tensor(std::vector<int64_t>{static_cast<int64_t>(mine.size())});
  Tensor lens = empty({n}, DType::i64);
  group.allgather(lens, len_in)->wait();
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) longest = std::max(longest, lens.data<int64_t>()[r]);
  size_t words = static_cast<size_t>((longest + 7) / 8);
  Tensor in = tensor(pack(mine, words));
  Tensor all = empty({static_cast<int64_t>(words) * n}, DType::i64);
  if (words) group.allgather(all, in)->wait();
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) {
    const char* p = reinterpret_cast<const char*>(all.data<int64_t>() + r * words);
    out.emplace_back(p, static_cast<size_t>(lens.data<int64_t>()[r]));
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 dist::ProcessGroup& group, DDPOptions options)
    : module_(std::move(module)), group_(group), options_(std::move(options)) {
  RG_CHECK(module_ != nullptr, "DistributedDataParallel: module is null");
  if (const char* env = std::getenv("RG_DDP_CHECK_EVERY"))
    options_.consistency_check_every = std::atoi(env);
  verify_same_parameters();
  broadcast_state();
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (auto& [name, p] : module_->named_parameters()) {
    if (!p.requires_grad()) continue;
    params.push_back(p);
    names.push_back(name);
  }
  ReducerOptions ro;
  ro.bucket_cap_bytes = static_cast<size_t>(options_.bucket_cap_mb * (1 << 20));
  ro.first_bucket_cap_bytes = static_cast<size_t>(options_.first_bucket_cap_mb * (1 << 20));
  ro.gradient_as_bucket_view = options_.gradient_as_bucket_view;
  ro.find_unused_parameters = options_.find_unused_parameters;
  ro.overlap = options_.overlap;
  ro.comm_hook = options_.comm_hook;
  ro.trace = options_.trace;
  ro.zero_stage = options_.zero_stage;
  reducer_ = std::make_unique<Reducer>(params, names, group_, ro);
}

void DistributedDataParallel::verify_same_parameters() {
  std::ostringstream mine;
  for (auto& [name, p] : module_->named_parameters())
    mine << name << " " << shape_str(p.shape()) << " " << dtype_name(p.dtype()) << "\n";
  std::vector<std::string> all = allgather_strings(group_, mine.str());
  auto reference = split_lines(all[0]);
  for (int r = 1; r < group_.size(); ++r) {
    auto other = split_lines(all[r]);
    size_t n = std::max(reference.size(), other.size());
    for (size_t i = 0; i < n; ++i) {
      std::string a = i < reference.size() ? reference[i] : "(none)";
      std::string b = i < other.size() ? other[i] : "(none)";
      RG_CHECK(a == b, "DistributedDataParallel: ranks hold different models; parameter ", i,
               " is '", a, "' on rank 0 but '", b, "' on rank ", r,
               " (every rank must build the same model: same names, shapes, dtypes, order)");
    }
  }
}

void DistributedDataParallel::broadcast_state() {
  NoGradGuard no_grad;
  for (auto& [name, p] : module_->named_parameters()) group_.broadcast(p.detach(), 0)->wait();
  for (auto& [name, b] : module_->named_buffers()) group_.broadcast(b.detach(), 0)->wait();
}

void DistributedDataParallel::pre_forward() {
  reducer_->prepare_for_forward();
  if (!join_active_) synchronize_step_state(0);
}

void DistributedDataParallel::synchronize_step_state(int buffer_root) {
  if (options_.broadcast_buffers && steps_ > 0) {
    NoGradGuard no_grad;
    for (auto& [name, b] : module_->named_buffers())
      group_.broadcast(b.detach(), buffer_root)->wait();
  }
  ++steps_;
  if (options_.consistency_check_every > 0 && steps_ % options_.consistency_check_every == 0)
    check_parameters_consistent();
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  pre_forward();
  return module_->forward(x);
}

void DistributedDataParallel::check_parameters_consistent() {
  std::vector<std::pair<std::string, Tensor>> named = module_->named_parameters();
  Tensor hashes = empty({static_cast<int64_t>(named.size())}, DType::i64);
  for (size_t i = 0; i < named.size(); ++i) {
    Tensor host = named[i].second.detach().to(kCPU).contiguous();
    hashes.data<int64_t>()[i] = static_cast<int64_t>(fnv1a(host.data_ptr(), host.nbytes()));
  }
  Tensor all = empty({static_cast<int64_t>(named.size()) * group_.size()}, DType::i64);
  group_.allgather(all, hashes)->wait();
  const int64_t* h = all.data<int64_t>();
  for (size_t i = 0; i < named.size(); ++i)
    for (int r = 1; r < group_.size(); ++r)
      RG_CHECK(h[i] == h[r * named.size() + i], "DistributedDataParallel: parameter '",
               named[i].first, "' differs between rank 0 and rank ", r,
               " (64-bit hashes differ): the replicas have diverged");
}

}  // namespace rg::nn
