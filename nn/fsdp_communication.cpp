// FullyShardedDataParallel's communication (see nn/fsdp.h): a unit's all-gather and the
// lending of its pieces to the parameters, freeing them, prefetching the next unit, the
// gradients' reduce-scatter and the end of backward, and their spans in the trace.
//
// Prefetch (FSDPOptions::prefetch): as unit u starts its forward, the all-gather of unit u+1
// (the next in module order, which a GPT runs next) is issued; as unit u starts its backward,
// the one of unit u-1. The collectives run on the group's communication thread while u
// computes, so at most two units are gathered at a time; every rank issues the same
// collectives in the same order, because the hooks fire in the same order everywhere.
#include <algorithm>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "core/memory_accounting.h"
#include "core/shareable_host_memory.h"
#include "dist/buffer_math.h"
#include "kernels/builtin.h"
#include "nn/fsdp.h"

namespace rg::nn {

// Issues the unit's all-gather into a new flat buffer, unless it is gathered or on its way.
bool FullyShardedDataParallel::start_gather(FsdpUnit& unit) {
  if (unit.gathered || unit.gather_work || unit.params.empty()) return false;
  {
    MemoryCategoryScope scope(MemoryCategory::parameters);
    unit.gathering = empty({unit.padded_numel}, unit.shard.dtype(), unit.shard.device());
  }
  unit.gather_work = group_.allgather(unit.gathering, unit.shard);
  unit.gather_issued = Clock::now();
  unit.gather_done_seen = false;
  return true;
}

// Waits for the unit's all-gather (issuing it first when no prefetch did), then lends each
// parameter's Storage its piece of the flat buffer (no copy): the same Storage object as in
// forward, so autograd's saved tensors see the values. Each lent piece holds the flat buffer
// alive, which goes (counted as parameters until then) when the last piece is given back.
void FullyShardedDataParallel::gather(FsdpUnit& unit) {
  if (unit.gathered || unit.params.empty()) return;
  start_gather(unit);
  const Clock::time_point wait_start = Clock::now();
  unit.gather_work->wait();
  const Clock::time_point now = Clock::now();
  if (options_.trace) {
    const int rank = group_.rank();
    const Clock::time_point done = unit.gather_done_seen ? unit.gather_done : now;
    options_.trace->span(rank, "comm", "all-gather " + unit_label(unit), unit.gather_issued, done);
    if (!unit.gather_done_seen)  // the part of the all-gather that compute waited for
      options_.trace->span(rank, "compute", "wait all-gather " + unit_label(unit), wait_start, now);
  }
  std::shared_ptr<Storage> block = unit.gathering.storage();
  const size_t element = itemsize(unit.shard.dtype());
  for (size_t k = 0; k < unit.params.size(); ++k) {
    const Tensor& p = params_[unit.params[k]];
    Storage piece(static_cast<char*>(block->data) + size_t(unit.offsets[k]) * element,
                  size_t(p.numel()) * element, block->device,
                  [block](void*, size_t) {});  // gives back only its hold on the block
    exchange_storage_memory(*p.storage(), piece);
  }
  unit.gathering = Tensor();
  unit.gather_work.reset();
  unit.gathered = true;
}

// Each parameter's Storage gives its piece back (it stays, empty, for the next gather); an
// all-gather still on its way is waited for and dropped.
void FullyShardedDataParallel::free_parameters(FsdpUnit& unit) {
  if (full_parameters_held_) return;
  if (unit.gather_work) {
    unit.gather_work->wait();
    unit.gather_work.reset();
    unit.gathering = Tensor();
  }
  if (!unit.gathered) return;
  for (size_t i : unit.params) {
    Storage& storage = *params_[i].storage();
    Storage emptied(nullptr, 0, storage.device, {});
    exchange_storage_memory(storage, emptied);
  }  // `emptied` gives the piece back here
  unit.gathered = false;
}

// Notes when collectives in flight are first seen complete (their end in the trace), and
// drops the full gradient buffers of the reduce-scatters that are done.
void FullyShardedDataParallel::poll_completions() {
  const Clock::time_point now = Clock::now();
  for (FsdpUnit& unit : units_)
    if (unit.gather_work && !unit.gather_done_seen && unit.gather_work->is_completed()) {
      unit.gather_done_seen = true;
      unit.gather_done = now;
    }
  std::erase_if(pending_, [&](const std::unique_ptr<Pending>& p) {
    if (!p->work->is_completed()) return false;
    if (p->reduced.defined()) dist::copy_buffer(*p->grad_shard, p->reduced);  // back from bf16
    if (options_.trace)
      options_.trace->span(group_.rank(), "comm", "reduce-scatter " + p->unit, p->issued, now);
    return true;
  });
}

// Waits for the oldest reduce-scatters until at most max_reduce_scatters_in_flight remain.
void FullyShardedDataParallel::limit_reduce_scatters() {
  const size_t limit = options_.max_reduce_scatters_in_flight;
  while (limit > 0 && pending_.size() > limit) {
    pending_.front()->work->wait();
    poll_completions();
  }
}

std::string FullyShardedDataParallel::unit_label(const FsdpUnit& unit) const {
  return unit.name.empty() ? "root" : unit.name;
}

void FullyShardedDataParallel::before_unit_forward(size_t u) {
  RG_CHECK(units_[0].gathered || units_[0].params.empty(), "FullyShardedDataParallel: unit '",
           units_[u].name,
           "' ran before the root's parameters were gathered; call forward() or pre_forward() "
           "before the module's own forward");
  poll_completions();
  gather(units_[u]);
  // Not while recomputing a checkpointed block in backward: the next block is done by then.
  if (options_.prefetch && u + 1 < units_.size() && !in_backward())
    prefetched_gathers_ += start_gather(units_[u + 1]);
  units_[u].compute_start = Clock::now();
}

// A backward will come: the output's gradient arrives just before the unit's backward, and
// its hook gathers the unit again (when it was resharded).
void FullyShardedDataParallel::after_unit_forward(size_t u, const Tensor& output) {
  FsdpUnit& unit = units_[u];
  if (options_.trace)
    options_.trace->span(group_.rank(), "compute", "forward " + unit_label(unit),
                         unit.compute_start, Clock::now());
  const bool backward_comes = GradMode::is_enabled() && output.defined() && output.requires_grad();
  if (backward_comes) {
    register_hook(output, [alive = std::weak_ptr<bool>(alive_), this, u](const Tensor& grad) {
      if (auto a = alive.lock(); a && *a) before_unit_backward(u);
      return grad;
    });
  }
  // A checkpointed block recomputed in backward (rg::checkpoint) keeps its parameters: its
  // backward follows at once.
  if (!backward_comes || (options_.reshard_after_forward && !in_backward())) free_parameters(unit);
}

void FullyShardedDataParallel::before_unit_backward(size_t u) {
  poll_completions();
  limit_reduce_scatters();
  gather(units_[u]);
  if (options_.prefetch && u > 1) prefetched_gathers_ += start_gather(units_[u - 1]);
  accumulate_into_flat_gradient(units_[u]);
  units_[u].compute_start = Clock::now();
}

// Before a synchronised backward of a unit whose parameters hold no .grad (no accumulation
// inside no_sync), each .grad becomes a zeroed view of one flat buffer: autograd accumulates
// into it in place, and the reduce-scatter reads it where it lies (no .grad besides it, no
// copy). Otherwise the gradients are copied into a flat buffer when the unit is done.
void FullyShardedDataParallel::accumulate_into_flat_gradient(FsdpUnit& unit) {
  if (!require_sync_ || unit.flat_gradient.defined() || unit.params.empty()) return;
  for (size_t i : unit.params)
    if (params_[i].grad().defined()) return;
  NoGradGuard no_grad;
  {
    MemoryCategoryScope scope(MemoryCategory::gradients);
    ShareableAllocations shared;  // peers of this host may map it
    unit.flat_gradient = zeros({unit.padded_numel}, unit.shard.dtype(), unit.shard.device());
  }
  for (size_t k = 0; k < unit.params.size(); ++k) {
    Tensor& p = params_[unit.params[k]];
    p.set_grad(dist::flat_slice(unit.flat_gradient, unit.offsets[k], p.numel()).view(p.shape()));
  }
}

// The unit's gradients laid flat and scaled by 1/N (the DDP reducer's scaling: in place for
// views of the flat buffer, else slot = grad * (1/N) in one pass), padding zero; each .grad
// is released.
Tensor FullyShardedDataParallel::flat_scaled_gradient(FsdpUnit& unit) {
  NoGradGuard no_grad;
  const double scale = 1.0 / group_.size();
  if (unit.flat_gradient.defined()) {
    Tensor full = std::move(unit.flat_gradient);
    unit.flat_gradient = Tensor();
    full.mul_(scale);
    for (size_t i : unit.params) params_[i].set_grad(Tensor());
    return full;
  }
  Tensor full = [&] {
    MemoryCategoryScope scope(MemoryCategory::gradients);
    ShareableAllocations shared;  // peers of this host may map it
    return empty({unit.padded_numel}, unit.shard.dtype(), unit.shard.device());
  }();
  dist::flat_slice(full, unit.numel, unit.padded_numel - unit.numel).zero_();
  for (size_t k = 0; k < unit.params.size(); ++k) {
    Tensor& p = params_[unit.params[k]];
    Tensor slot = dist::flat_slice(full, unit.offsets[k], p.numel());
    Tensor grad = p.grad();
    if (!grad.defined()) {
      slot.zero_();
      continue;
    }
    RG_KERNEL(slot.device(), binary)
    (BinaryOp::mul, slot, grad.reshape({-1}),
     scalar_tensor(scale, slot.dtype(), slot.device()).expand(slot.shape()));
    p.set_grad(Tensor());
  }
  return full;
}

// The unit's last gradient is in: reduce-scatter (synchronised backward) and free.
void FullyShardedDataParallel::on_gradient_ready(size_t u) {
  if (!backward_started_) {
    backward_started_ = true;
    queue_callback([alive = std::weak_ptr<bool>(alive_), this] {
      if (auto a = alive.lock(); a && *a) finish_backward();
    });
  }
  FsdpUnit& unit = units_[u];
  RG_CHECK(unit.grads_ready < unit.params.size(), "FullyShardedDataParallel: unit '", unit.name,
           "' received its gradients twice in one backward; call backward once per forward");
  if (++unit.grads_ready < unit.params.size()) return;
  if (options_.trace && u > 0)
    options_.trace->span(group_.rank(), "compute", "backward " + unit_label(unit),
                         unit.compute_start, Clock::now());
  if (require_sync_) reduce_scatter_gradients(unit);
  free_parameters(unit);
  poll_completions();
}

// flat = grad * (1/N) per parameter (the DDP reducer's scaling), padding zero; each .grad is
// released, and rank r receives the sum of slice r: its averaged gradient shard. With a
// reduce_dtype (bf16) the flat buffer is cast to it for the wire (the sums accumulate in f32,
// dist/process_group.h) and the result is cast back into the shard once it arrives.
void FullyShardedDataParallel::reduce_scatter_gradients(FsdpUnit& unit) {
  Tensor full = flat_scaled_gradient(unit);
  if (!unit.grad_shard.defined()) {
    unit.grad_shard = zeros({unit.shard_numel}, unit.shard.dtype(), unit.shard.device());
    tag_memory(*unit.grad_shard.storage(), MemoryCategory::gradients);
  }
  auto pending = std::make_unique<Pending>();
  pending->unit = unit_label(unit);
  pending->issued = Clock::now();
  if (options_.reduce_dtype && *options_.reduce_dtype != full.dtype()) {
    NoGradGuard no_grad;
    MemoryCategoryScope scope(MemoryCategory::gradients);
    ShareableAllocations shared;  // peers of this host may map it
    full = full.to(*options_.reduce_dtype);
    pending->reduced = empty({unit.shard_numel}, full.dtype(), full.device());
    pending->grad_shard = &unit.grad_shard;
  }
  const Tensor& out = pending->reduced.defined() ? pending->reduced : unit.grad_shard;
  pending->work = group_.reduce_scatter(out, full);
  pending->full_gradient = std::move(full);
  pending_.push_back(std::move(pending));
}

// Waits for the reduce-scatters (their buffers go), checks every unit got its gradients.
void FullyShardedDataParallel::finish_backward() {
  backward_started_ = false;
  for (auto& pending : pending_) pending->work->wait();
  poll_completions();
  std::string missing;
  for (FsdpUnit& unit : units_) {
    if (unit.grads_ready < unit.params.size())
      missing +=
          str(missing.empty() ? "" : ", ", "'", unit_label(unit), "' (",
              unit.params.size() - unit.grads_ready, " of ", unit.params.size(), " parameters)");
    unit.grads_ready = 0;
    if (&unit != &units_[0]) free_parameters(unit);
  }
  if (!missing.empty()) {
    std::string error =
        str("FullyShardedDataParallel: rank ", group_.rank(),
            ": units got no gradient for some parameters in this backward: ", missing,
            "; every parameter must take part in the loss");
    group_.abort(error);
    RG_FAIL(error);
  }
  if (require_sync_) ++synchronized_backwards_;
}

}  // namespace rg::nn
