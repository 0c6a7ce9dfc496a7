// The Reducer's autograd side; see reducer.h for the design.
#include "nn/reducer.h"

#include <algorithm>
#include <sstream>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "core/memory_accounting.h"
#include "kernels/builtin.h"
#include "ops/ops.h"

namespace rg::nn {

Reducer::Reducer(std::vector<Tensor> params, std::vector<std::string> names,
                 dist::ProcessGroup& group, ReducerOptions options)
    : params_(std::move(params)),
      names_(std::move(names)),
      group_(group),
      options_(std::move(options)),
      transport_(group, options_.zero_stage >= 1 ? dist::reduce_scatter_hook : options_.comm_hook,
                 options_.trace),
      alive_(std::make_shared<bool>(true)) {
  RG_CHECK(names_.size() == params_.size(), "Reducer: ", params_.size(), " parameters but ",
           names_.size(), " names");
  RG_CHECK(!params_.empty(), "Reducer: no parameters to reduce");
  RG_CHECK(options_.zero_stage >= 0 && options_.zero_stage <= 2, "Reducer: zero_stage ",
           options_.zero_stage,
           " is not supported (0, 1 or 2); stage 3 is nn::FullyShardedDataParallel (nn/fsdp.h)");
  RG_CHECK(options_.zero_stage == 0 || !options_.gradient_as_bucket_view, "Reducer: zero_stage ",
           options_.zero_stage,
           " cannot keep gradients as bucket views (the buckets hold "
           "shards of averaged gradients, then parameters)");
  for (size_t i = 0; i < params_.size(); ++i) {
    RG_CHECK(params_[i].is_leaf() && params_[i].requires_grad(), "Reducer: parameter '", names_[i],
             "' must be a leaf that requires grad");
    RG_CHECK(group_.supports_device(params_[i].device()), "Reducer: the ", group_.backend_name(),
             " backend cannot reduce tensors on ", params_[i].device().str(), " (parameter '",
             names_[i], "')");
  }
  transport_.set_sharded(options_.zero_stage == 2);
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

Reducer::~Reducer() { *alive_ = false; }

void Reducer::build_buckets(const std::vector<size_t>& order) {
  // Keep gradients that live in the old buckets (gradient_as_bucket_view).
  std::vector<Tensor> old_grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) old_grads[i] = params_[i].grad().clone();
  int64_t pad_multiple = options_.zero_stage >= 1 ? group_.size() : 1;
  // Members of half a bucket or more get buckets of their own, to be lent their gradients.
  const size_t alone_bytes = lends_gradients() ? options_.bucket_cap_bytes / 2 : SIZE_MAX;
  transport_.assign(params_,
                    dist::plan_buckets(params_, order, options_.first_bucket_cap_bytes,
                                       options_.bucket_cap_bytes, alone_bytes),
                    pad_multiple);
  if (options_.gradient_as_bucket_view) {
    NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      Tensor slot = transport_.slot(i).view(params_[i].shape());
      if (old_grads[i].defined()) slot.copy_(old_grads[i]);
      params_[i].set_grad(slot);
    }
  }
}

void Reducer::prepare_for_forward() {
  RG_CHECK(error_.empty(), error_);
  if (backward_started_) reset_for_next_backward();  // a backward that threw half-way
}

namespace {
// No tensor but this copy and the parameter's references the gradient, and no other tensor
// its memory: replacing or changing it in place is unobservable. Why use counts are a sound
// test, and the only place that relies on them:
// - every other holder adds one: a user's variable, a hook's capture, a view or a saved
//   tensor holds the TensorImpl (use count > 2) or the Storage (> 1);
// - so the test can only err towards "held elsewhere", and the fallback for that (copy the
//   average into the gradient) is always correct; it never lends a gradient someone sees;
// - no new holder can appear between the test and the lending: the hooks and the end of
//   backward run on the thread that runs backward, and reading a .grad from another thread
//   during backward is a data race in PyTorch as here.
// tests/ddp/test_reducer.cpp checks both sides ("... held only by its parameter ...").
bool held_only_by_its_parameter(const Tensor& grad) {
  return grad.defined() && grad.impl_ptr().use_count() == 2 && grad.storage().use_count() == 1;
}
}  // namespace

bool Reducer::lends_gradients() const {
  return !options_.gradient_as_bucket_view && options_.zero_stage == 0;
}

// A gradient lent to its bucket is averaged where it lies: neither the copy into the bucket
// nor a hand-over at the end moves its bytes (the copy in was about 2 of the 5.5-6 ms of CPU
// a synchronized step added in bench/ddp, docs/dist.md).
bool Reducer::adopt_gradient(size_t i) {
  const size_t b = transport_.bucket_of(i);
  Tensor grad = params_[i].grad();
  if (!lends_gradients() || !held_only_by_its_parameter(grad) || !transport_.can_adopt(b, grad))
    return false;
  NoGradGuard no_grad;
  grad.mul_(1.0 / group_.size());
  transport_.adopt_buffer(b, grad.reshape({-1}));
  return true;
}

bool Reducer::scale_into_slot(size_t i) {
  NoGradGuard no_grad;
  transport_.ensure_buffer(transport_.bucket_of(i));  // ZeRO-2 released it after the last round
  Tensor grad = params_[i].grad();
  Tensor slot = transport_.slot(i);
  double scale = 1.0 / group_.size();
  bool is_view =
      grad.defined() && grad.storage() == slot.storage() && grad.offset() == slot.offset();
  if (is_view) {
    slot.mul_(scale);
    return false;
  }
  if (!grad.defined()) {
    slot.zero_();
    return false;
  }
  // One pass: slot = grad * (1/world).
  RG_KERNEL(slot.device(), binary)
  (BinaryOp::mul, slot, grad.reshape({-1}),
   scalar_tensor(scale, slot.dtype(), slot.device()).expand(slot.shape()));
  return true;
}

// ZeRO-2: once in its bucket slot, the local gradient is no longer needed on this rank.
void Reducer::release_local_gradient(size_t i) {
  if (options_.zero_stage == 2) params_[i].set_grad(Tensor());
}

void Reducer::mark_ready(size_t i) {
  if (joined_) fail_for_backward_after_join(i);
  if (!require_sync_) return;  // no_sync: gradients accumulate locally in .grad
  if (!backward_started_) {
    backward_started_ = true;
    backward_start_ = Clock::now();
    queue_callback([alive = std::weak_ptr<bool>(alive_), this] {
      if (auto a = alive.lock(); a && *a) finalize_backward();
    });
  }
  RG_CHECK(!ready_[i], "DistributedDataParallel: parameter '", names_[i],
           "' received its gradient twice in one backward; call backward once per forward "
           "(or use no_sync for gradient accumulation)");
  ready_[i] = true;
  ready_order_.push_back(i);
  transport_.poll_completions();
  if (!adopt_gradient(i) && scale_into_slot(i) && options_.gradient_as_bucket_view)
    params_[i].set_grad(transport_.slot(i).view(params_[i].shape()));
  release_local_gradient(i);
  if (options_.trace)
    options_.trace->instant(group_.rank(), "backward", "grad ready: " + names_[i], Clock::now());
  if (transport_.mark_filled(i) && options_.overlap) transport_.launch_ready();
}

void Reducer::finalize_backward() {
  transport_.poll_completions();
  auto backward_end = Clock::now();
  transport_.mark_backward_end();  // on the device: the compute stream's event
  fail_for_missing_gradients(contribute_unused_parameters());
  complete_iteration(backward_end, ready_order_);
}

void Reducer::complete_iteration(Clock::time_point backward_end, std::vector<size_t> order) {
  transport_.launch_ready();
  RG_CHECK(transport_.all_launched(), "Reducer: internal error: a bucket was not launched");
  transport_.wait_all(backward_start_, backward_end);
  bool zero = options_.zero_stage >= 1;  // the averaged gradients stay sharded in the buckets
  if (!options_.gradient_as_bucket_view && !zero) write_averaged_gradients();
  reset_for_next_backward();
  ++synchronized_backwards_;
  if (!rebuilt_ && !zero) rebuild_from_ready_order(std::move(order));
}

// Every slot zero, every bucket all-reduced in bucket order as a real backward would: the
// collectives line up with the other ranks' and this rank receives their average. The order
// it offers for the one-time rebuild is the current layout (rank 0's is taken anyway).
void Reducer::shadow_backward() {
  prepare_for_forward();
  RG_CHECK(joined_, "DistributedDataParallel: shadow_backward on rank ", group_.rank(),
           ", which has not joined; only a rank that has run out of data shadows (nn/join.h)");
  RG_CHECK(require_sync_, "DistributedDataParallel: shadow_backward inside no_sync on rank ",
           group_.rank(), "; a joined rank shadows only the synchronised backward of a step");
  backward_start_ = Clock::now();
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    transport_.ensure_buffer(transport_.bucket_of(i));
    Tensor slot = transport_.slot(i);
    if (options_.gradient_as_bucket_view) params_[i].set_grad(slot.view(params_[i].shape()));
    slot.zero_();
    transport_.mark_filled(i);
  }
  std::vector<size_t> order;
  for (const auto& bucket : transport_.assignment())
    order.insert(order.end(), bucket.begin(), bucket.end());
  transport_.mark_backward_end();
  complete_iteration(backward_start_, std::move(order));
}

void Reducer::fail_for_backward_after_join(size_t i) {
  error_ = str("DistributedDataParallel: rank ", group_.rank(),
               " has joined (run out of data) but its backward reached parameter '", names_[i],
               "'; once joined, a rank calls join.shadow_backward() instead of backward until "
               "every rank has joined (nn/join.h)");
  group_.abort(error_);  // the other ranks fail now, naming this rank, instead of hanging
  RG_FAIL(error_);
}

// Parameters that got no gradient this backward: with find_unused_parameters they
// contribute their local gradient if any (accumulated inside no_sync), else zero, so every
// bucket completes on every rank; otherwise their names are returned.
std::vector<std::string> Reducer::contribute_unused_parameters() {
  std::vector<std::string> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    if (!options_.find_unused_parameters) {
      missing.push_back(names_[i]);
      continue;
    }
    scale_into_slot(i);
    release_local_gradient(i);
    ready_[i] = true;
    transport_.mark_filled(i);
  }
  return missing;
}

void Reducer::fail_for_missing_gradients(const std::vector<std::string>& missing) {
  if (missing.empty()) return;
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

// A gradient lent to its bucket already holds the average; the bucket takes its own buffer
// back. A gradient that only its parameter references (no other tensor, no view of its
// memory: zero_grad(set_to_none) then backward, PyTorch's default loop) is replaced by its
// slot itself, and the slot's bucket gets a new buffer: nothing to copy, and nothing anyone
// holds changes. Any other gradient receives the average in place, as before. (The copy back
// was a quarter to a third of DDP's extra time per step on one core per rank, docs/dist.md.)
void Reducer::write_averaged_gradients() {
  NoGradGuard no_grad;
  std::vector<bool> handed_over(transport_.bucket_count(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    const size_t b = transport_.bucket_of(i);
    if (transport_.adopted(b)) {
      transport_.release_adopted(b);
      continue;
    }
    Tensor averaged = transport_.slot(i).view(params_[i].shape());
    Tensor grad = params_[i].grad();
    if (grad.defined() && !held_only_by_its_parameter(grad)) {
      grad.copy_(averaged);
      continue;
    }
    grad = Tensor();
    params_[i].set_grad(averaged);
    handed_over[b] = true;
  }
  for (size_t b = 0; b < handed_over.size(); ++b)
    if (handed_over[b])
      tag_memory(*transport_.replace_buffer(b).storage(), MemoryCategory::gradients);
}

// Once, after the first iteration: every rank takes rank 0's observed gradient-ready order
// (parameters that never became ready go last) and builds identical buckets from it.
void Reducer::rebuild_from_ready_order(std::vector<size_t> order) {
  rebuilt_ = true;
  for (size_t i = 0; i < params_.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  Tensor mine = empty({static_cast<int64_t>(order.size())}, DType::i64, kCPU);
  for (size_t k = 0; k < order.size(); ++k)
    mine.data<int64_t>()[k] = static_cast<int64_t>(order[k]);
  // In the backend's own memory (nccl's is its GPU, which cannot send host tensors).
  Tensor shared = mine.to(group_.default_device());
  group_.broadcast(shared, 0)->wait();
  const Tensor on_host = shared.to(kCPU);
  std::vector<size_t> agreed(order.size());
  for (size_t k = 0; k < order.size(); ++k)
    agreed[k] = static_cast<size_t>(on_host.data<int64_t>()[k]);
  build_buckets(agreed);
}

void Reducer::reset_for_next_backward() {
  std::fill(ready_.begin(), ready_.end(), false);
  ready_order_.clear();
  transport_.reset();
  backward_started_ = false;
}

}  // namespace rg::nn
