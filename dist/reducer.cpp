// The Reducer's mechanics; see reducer.h for the design.
#include "dist/reducer.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "kernels/builtin.h"
#include "ops/ops.h"

namespace rg::dist {

using SteadyClock = std::chrono::steady_clock;

std::shared_ptr<Work> allreduce_hook(ProcessGroup& group, const Tensor& bucket) {
  return group.allreduce(bucket, CombineOp::sum);
}

namespace {
// Runs `then` once the inner work has finished, from whichever thread waits first.
class ThenWork : public Work {
 public:
  ThenWork(std::shared_ptr<Work> inner, std::function<void()> then)
      : inner_(std::move(inner)), then_(std::move(then)) {}
  bool wait(Milliseconds timeout) override {
    if (!inner_->wait(timeout)) return false;
    std::call_once(once_, then_);
    return true;
  }
  bool is_completed() override { return inner_->is_completed(); }

 private:
  std::shared_ptr<Work> inner_;
  std::function<void()> then_;
  std::once_flag once_;
};
}  // namespace

std::shared_ptr<Work> bf16_compress_hook(ProcessGroup& group, const Tensor& bucket) {
  Tensor compressed = bucket.to(DType::bf16);
  auto work = group.allreduce(compressed, CombineOp::sum);
  return std::make_shared<ThenWork>(work, [bucket, compressed]() mutable {
    NoGradGuard no_grad;
    bucket.copy_(compressed);
  });
}

Reducer::Reducer(std::vector<Tensor> params, std::vector<std::string> names, ProcessGroup& group,
                 ReducerOptions options)
    : params_(std::move(params)),
      names_(std::move(names)),
      group_(group),
      options_(std::move(options)),
      alive_(std::make_shared<bool>(true)) {
  RG_CHECK(names_.size() == params_.size(), "Reducer: ", params_.size(), " parameters but ",
           names_.size(), " names");
  RG_CHECK(!params_.empty(), "Reducer: no parameters to reduce");
  for (size_t i = 0; i < params_.size(); ++i) {
    RG_CHECK(params_[i].is_leaf() && params_[i].requires_grad(), "Reducer: parameter '", names_[i],
             "' must be a leaf that requires grad");
    RG_CHECK(group_.supports_device(params_[i].device()), "Reducer: the ", group_.backend_name(),
             " backend cannot reduce tensors on ", params_[i].device().str(), " (parameter '",
             names_[i], "')");
  }
  ready_.assign(params_.size(), false);
  std::vector<size_t> reverse_order(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) reverse_order[i] = params_.size() - 1 - i;
  build_buckets(reverse_order);
  for (size_t i = 0; i < params_.size(); ++i) {
    std::weak_ptr<bool> alive = alive_;
    register_post_accumulate_grad_hook(params_[i], [alive, this, i](const Tensor&) {
      if (auto a = alive.lock(); a && *a) mark_ready(i);
    });
  }
}

Reducer::~Reducer() {
  *alive_ = false;
  for (auto& bucket : buckets_)
    if (bucket.work) {
      try {
        bucket.work->wait();
      } catch (...) {  // the error was (or will be) reported through backward
      }
    }
}

void Reducer::build_buckets(const std::vector<size_t>& order) {
  // Keep gradients that live in the old buckets (gradient_as_bucket_view).
  std::vector<Tensor> old_grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) old_grads[i] = params_[i].grad().clone();

  buckets_.clear();
  bucket_of_.assign(params_.size(), 0);
  index_in_bucket_.assign(params_.size(), 0);
  struct Open {
    std::vector<size_t> params;
    size_t bytes = 0;
  };
  std::map<std::pair<int, std::string>, Open> open;  // (dtype, device) -> bucket being filled
  std::vector<std::vector<size_t>> layout;
  for (size_t i : order) {
    const Tensor& p = params_[i];
    auto key = std::make_pair(static_cast<int>(p.dtype()), p.device().str());
    Open& b = open[key];
    size_t cap = layout.empty() ? options_.first_bucket_cap_bytes : options_.bucket_cap_bytes;
    b.params.push_back(i);
    b.bytes += p.nbytes();
    if (b.bytes >= cap) {
      layout.push_back(std::move(b.params));
      open.erase(key);
    }
  }
  for (auto& [key, b] : open)
    if (!b.params.empty()) layout.push_back(std::move(b.params));

  NoGradGuard no_grad;
  for (auto& members : layout) {
    Bucket bucket;
    int64_t total = 0;
    for (size_t i : members) {
      bucket.offsets.push_back(total);
      total += params_[i].numel();
    }
    const Tensor& first = params_[members.front()];
    bucket.buffer = zeros({total}, first.dtype(), first.device());
    bucket.params = members;
    bucket.pending = members.size();
    for (size_t k = 0; k < members.size(); ++k) {
      bucket_of_[members[k]] = buckets_.size();
      index_in_bucket_[members[k]] = k;
    }
    buckets_.push_back(std::move(bucket));
  }
  if (options_.gradient_as_bucket_view) {
    for (size_t i = 0; i < params_.size(); ++i) {
      Tensor slot = slot_of(i).view(params_[i].shape());
      if (old_grads[i].defined()) slot.copy_(old_grads[i]);
      params_[i].set_grad(slot);
    }
  }
  next_bucket_to_launch_ = 0;
}

Tensor Reducer::slot_of(size_t i) const {
  const Bucket& bucket = buckets_[bucket_of_[i]];
  return bucket.buffer.narrow(0, bucket.offsets[index_in_bucket_[i]], params_[i].numel());
}

std::vector<std::vector<size_t>> Reducer::bucket_assignment() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.params);
  return out;
}

void Reducer::prepare_for_forward() {
  RG_CHECK(error_.empty(), error_);
  if (backward_started_) reset_for_next_backward();  // a backward that threw half-way
}

void Reducer::mark_ready(size_t i) {
  if (!require_sync_) return;  // no_sync: gradients accumulate locally in .grad
  if (!backward_started_) {
    backward_started_ = true;
    backward_start_ = SteadyClock::now();
    iteration_done_ = false;
    queue_callback([alive = std::weak_ptr<bool>(alive_), this] {
      if (auto a = alive.lock(); a && *a) finalize_backward();
    });
  }
  RG_CHECK(!ready_[i], "DistributedDataParallel: parameter '", names_[i],
           "' received its gradient twice in one backward; call backward once per forward "
           "(or use no_sync for gradient accumulation)");
  ready_[i] = true;
  ready_order_.push_back(i);
  poll_completions();

  NoGradGuard no_grad;
  Tensor grad = params_[i].grad();
  Tensor slot = slot_of(i);
  double scale = 1.0 / group_.size();
  bool is_view =
      grad.defined() && grad.storage() == slot.storage() && grad.offset() == slot.offset();
  if (is_view) {
    slot.mul_(scale);
  } else {
    // One pass: slot = grad * (1/world).
    Tensor flat = grad.reshape({-1});
    RG_KERNEL(slot.device(), binary)
    (BinaryOp::mul, slot, flat,
     scalar_tensor(scale, slot.dtype(), slot.device()).expand(slot.shape()));
    if (options_.gradient_as_bucket_view) params_[i].set_grad(slot.view(params_[i].shape()));
  }
  if (options_.trace)
    options_.trace->instant(group_.rank(), "backward", "grad ready: " + names_[i],
                            SteadyClock::now());

  Bucket& bucket = buckets_[bucket_of_[i]];
  if (--bucket.pending == 0 && options_.overlap) launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  while (next_bucket_to_launch_ < buckets_.size() &&
         buckets_[next_bucket_to_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_bucket_to_launch_++];
    bucket.launched_at = SteadyClock::now();
    bucket.done_seen = false;
    bucket.work = options_.comm_hook(group_, bucket.buffer);
    stats_.buckets_launched++;
  }
}

void Reducer::poll_completions() {
  for (size_t b = 0; b < next_bucket_to_launch_; ++b) {
    Bucket& bucket = buckets_[b];
    if (bucket.work && !bucket.done_seen && bucket.work->is_completed()) {
      bucket.done_seen = true;
      bucket.done_at = SteadyClock::now();
    }
  }
}

void Reducer::finalize_backward() {
  poll_completions();
  auto backward_end = SteadyClock::now();
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    if (!options_.find_unused_parameters) {
      missing.push_back(names_[i]);
      continue;
    }
    // Unused this iteration: contribute the local gradient if any (accumulated inside
    // no_sync), else zero, so the bucket completes on every rank.
    NoGradGuard no_grad;
    Tensor slot = slot_of(i);
    Tensor grad = params_[i].grad();
    if (grad.defined() && !(grad.storage() == slot.storage() && grad.offset() == slot.offset()))
      slot.copy_(grad.reshape({-1}) * (1.0 / group_.size()));
    else if (grad.defined())
      slot.mul_(1.0 / group_.size());
    else
      slot.zero_();
    ready_[i] = true;
    buckets_[bucket_of_[i]].pending--;
  }
  if (!missing.empty()) {
    std::ostringstream os;
    os << "DistributedDataParallel: rank " << group_.rank() << ": " << missing.size()
       << " parameter(s) received no gradient in this backward: ";
    for (size_t k = 0; k < missing.size() && k < 8; ++k)
      os << (k ? ", " : "") << "'" << missing[k] << "'";
    if (missing.size() > 8) os << ", ...";
    os << ". Their buckets can never be all-reduced. If some parameters are unused in the "
          "forward, construct DistributedDataParallel with find_unused_parameters = true.";
    error_ = os.str();
    group_.abort(error_);  // the other ranks fail now, naming this rank, instead of hanging
    reset_for_next_backward();
    RG_FAIL(error_);
  }
  launch_ready_buckets();
  RG_CHECK(next_bucket_to_launch_ == buckets_.size(), "Reducer: internal error: bucket ",
           next_bucket_to_launch_, " not launched");

  // Wait in launch order; account communication time and how much of it hid behind backward.
  stats_.comm_seconds = 0;
  stats_.hidden_seconds = 0;
  auto previous_end = backward_start_;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.work->wait();
    if (!bucket.done_seen) bucket.done_at = SteadyClock::now();
    auto done = bucket.done_at;
    auto start = std::max(bucket.launched_at, previous_end);
    if (done < start) done = start;
    previous_end = done;
    double total = std::chrono::duration<double>(done - start).count();
    double hidden = std::chrono::duration<double>(std::min(done, backward_end) - start).count();
    stats_.comm_seconds += total;
    stats_.hidden_seconds += std::max(0.0, hidden);
    if (options_.trace)
      options_.trace->span(group_.rank(), "comm", "allreduce bucket " + std::to_string(b), start,
                           done,
                           "{\"params\": " + std::to_string(bucket.params.size()) +
                               ", \"bytes\": " + std::to_string(bucket.buffer.nbytes()) + "}");
    bucket.work.reset();
  }
  if (!options_.gradient_as_bucket_view) {
    NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      Tensor averaged = slot_of(i).view(params_[i].shape());
      Tensor grad = params_[i].grad();
      if (grad.defined())
        grad.copy_(averaged);
      else
        params_[i].set_grad(averaged.clone());
    }
  }
  bool first_iteration = !rebuilt_;
  std::vector<size_t> order = ready_order_;
  reset_for_next_backward();
  if (first_iteration) {
    rebuilt_ = true;
    // Agree on rank 0's observed order so every rank builds identical buckets.
    for (size_t i = 0; i < params_.size(); ++i)
      if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
    Tensor shared = empty({static_cast<int64_t>(order.size())}, DType::i64, kCPU);
    for (size_t k = 0; k < order.size(); ++k)
      shared.data<int64_t>()[k] = static_cast<int64_t>(order[k]);
    group_.broadcast(shared, 0)->wait();
    std::vector<size_t> agreed(order.size());
    for (size_t k = 0; k < order.size(); ++k)
      agreed[k] = static_cast<size_t>(shared.data<int64_t>()[k]);
    build_buckets(agreed);
    for (auto& bucket : buckets_) bucket.pending = bucket.params.size();
  }
  iteration_done_ = true;
}

void Reducer::reset_for_next_backward() {
  std::fill(ready_.begin(), ready_.end(), false);
  ready_order_.clear();
  for (auto& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
  }
  next_bucket_to_launch_ = 0;
  backward_started_ = false;
}

}  // namespace rg::dist
