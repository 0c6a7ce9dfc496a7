// FullyShardedDataParallel (see nn/fsdp.h): units and shards, gathering and freeing a
// unit's parameters, the forward and backward hooks, and the gradients' reduce-scatter.
#include "nn/fsdp.h"

#include <algorithm>

#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "core/memory_accounting.h"
#include "core/shareable_host_memory.h"
#include "dist/buffer_math.h"
#include "kernels/builtin.h"
#include "nn/gpt.h"

namespace rg::nn {

struct FullyShardedDataParallel::Pending {
  Tensor full_gradient;  // the reduce-scatter's input: alive until it completes
  std::shared_ptr<dist::Work> work;
};

namespace {

Tensor flat(const Tensor& t) { return t.detach().reshape({-1}); }

// A buffer for a collective, born in `category`.
Tensor collective_buffer(int64_t numel, const Tensor& like, MemoryCategory category) {
  MemoryCategoryScope scope(category);
  ShareableAllocations shared;  // peers of this host may map it
  return empty({numel}, like.dtype(), like.device());
}

void fail_on_checkpointing(const Module& module) {
  auto* gpt = dynamic_cast<const GPT*>(&module);
  RG_CHECK(gpt == nullptr || !gpt->checkpoint_activations,
           "FullyShardedDataParallel: activation checkpointing (GPT::checkpoint_activations) "
           "is not supported with ZeRO-3 yet (recomputation would need to re-gather)");
}

}  // namespace

FsdpNoSyncGuard::FsdpNoSyncGuard(FullyShardedDataParallel* fsdp) : fsdp_(fsdp) {
  if (fsdp_) fsdp_->set_require_sync(false);
}
FsdpNoSyncGuard::FsdpNoSyncGuard(FsdpNoSyncGuard&& other) noexcept : fsdp_(other.fsdp_) {
  other.fsdp_ = nullptr;
}
FsdpNoSyncGuard::~FsdpNoSyncGuard() {
  if (fsdp_) fsdp_->set_require_sync(true);
}

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<Module> module,
                                                   dist::ProcessGroup& group, FSDPOptions options)
    : module_(std::move(module)),
      group_(group),
      options_(options),
      alive_(std::make_shared<bool>(true)) {
  RG_CHECK(module_ != nullptr, "FullyShardedDataParallel: no module");
  fail_on_checkpointing(*module_);
  for (auto& [name, p] : module_->named_parameters()) {
    RG_CHECK(p.is_leaf() && p.requires_grad(), "FullyShardedDataParallel: parameter '", name,
             "' must be a leaf that requires grad");
    RG_CHECK(p.dtype() == DType::f32 || p.dtype() == DType::f64,
             "FullyShardedDataParallel: parameter '", name, "' has dtype ", p.dtype(),
             "; the shards take float32 or float64");
    RG_CHECK(p.is_contiguous() && p.offset() == 0 &&
                 p.storage()->nbytes == size_t(p.numel()) * itemsize(p.dtype()),
             "FullyShardedDataParallel: parameter '", name,
             "' must own its whole storage (not a view), so that freeing it frees only it");
    RG_CHECK(group_.supports_device(p.device()), "FullyShardedDataParallel: the ",
             group_.backend_name(), " backend cannot gather tensors on ", p.device().str(),
             " (parameter '", name, "')");
    params_.push_back(p);
    names_.push_back(name);
  }
  RG_CHECK(!params_.empty(), "FullyShardedDataParallel: the module has no parameters");
  plan_units();
  shard_parameters();
  register_hooks();
}

FullyShardedDataParallel::~FullyShardedDataParallel() {
  *alive_ = false;
  for (auto& pending : pending_) pending->work->wait();
}

// The root (index 0) holds what no Block holds; each Block, in module order, is a unit.
void FullyShardedDataParallel::plan_units() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> blocks;
  auto walk = [&](auto& self, const std::string& path, const std::shared_ptr<Module>& m) -> void {
    if (std::dynamic_pointer_cast<Block>(m)) {
      blocks.emplace_back(path, m);
      return;
    }
    for (const auto& [name, child] : m->named_children())
      self(self, path.empty() ? name : path + "." + name, child);
  };
  walk(walk, "", module_);
  unit_of_.assign(params_.size(), SIZE_MAX);
  std::vector<std::vector<size_t>> members(blocks.size() + 1);
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const Tensor& p : blocks[b].second->parameters()) {
      auto it = std::find_if(params_.begin(), params_.end(),
                             [&](const Tensor& q) { return q.is_same(p); });
      if (it != params_.end() && unit_of_[it - params_.begin()] == SIZE_MAX)
        unit_of_[it - params_.begin()] = b + 1;
    }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (unit_of_[i] == SIZE_MAX) unit_of_[i] = 0;
    members[unit_of_[i]].push_back(i);
  }
  unit_modules_.push_back(nullptr);
  for (auto& [path, m] : blocks) unit_modules_.push_back(m);
  for (size_t u = 0; u < members.size(); ++u) {
    FsdpUnit unit;
    unit.name = u == 0 ? "" : blocks[u - 1].first;
    for (size_t i : members[u]) {
      RG_CHECK(params_[i].dtype() == params_[members[u][0]].dtype() &&
                   params_[i].device() == params_[members[u][0]].device(),
               "FullyShardedDataParallel: unit '", unit.name, "' mixes dtypes or devices ('",
               names_[i], "'); a unit's flat buffer has one");
      unit.params.push_back(i);
      unit.offsets.push_back(unit.numel);
      unit.numel += params_[i].numel();
    }
    const int64_t world = group_.size();
    unit.padded_numel = (unit.numel + world - 1) / world * world;
    unit.shard_numel = unit.padded_numel / world;
    unit.shard_start = group_.rank() * unit.shard_numel;
    units_.push_back(std::move(unit));
  }
}

// Rank 0's values (as DDP broadcasts them), laid flat per unit; this rank keeps its shard.
void FullyShardedDataParallel::shard_parameters() {
  NoGradGuard no_grad;
  for (FsdpUnit& unit : units_) {
    if (unit.params.empty()) continue;
    const Tensor& first = params_[unit.params[0]];
    Tensor full = collective_buffer(unit.padded_numel, first, MemoryCategory::other);
    dist::flat_slice(full, unit.numel, unit.padded_numel - unit.numel).zero_();
    for (size_t k = 0; k < unit.params.size(); ++k) {
      const Tensor& p = params_[unit.params[k]];
      dist::copy_buffer(dist::flat_slice(full, unit.offsets[k], p.numel()), flat(p));
    }
    group_.broadcast(full, 0)->wait();
    unit.shard = dist::flat_slice(full, unit.shard_start, unit.shard_numel).clone();
    tag_memory(*unit.shard.storage(), MemoryCategory::parameters);
    unit.gathered = true;
    free_parameters(unit);
  }
}

void FullyShardedDataParallel::register_hooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    std::weak_ptr<bool> alive = alive_;
    const size_t u = unit_of_[i];
    register_post_accumulate_grad_hook(params_[i], [alive, this, u](const Tensor&) {
      if (auto a = alive.lock(); a && *a) on_gradient_ready(u);
    });
  }
  for (size_t u = 1; u < units_.size(); ++u) {
    std::weak_ptr<bool> alive = alive_;
    unit_modules_[u]->register_forward_pre_hook([alive, this, u](Module&) {
      if (auto a = alive.lock(); !a || !*a) return;
      RG_CHECK(units_[0].gathered || units_[0].params.empty(), "FullyShardedDataParallel: unit '",
               units_[u].name,
               "' ran before the root's parameters were gathered; call forward() or "
               "pre_forward() before the module's own forward");
      gather(units_[u]);
    });
    unit_modules_[u]->register_forward_hook([alive, this, u](Module&, const Tensor& output) {
      if (auto a = alive.lock(); a && *a) after_unit_forward(units_[u], output);
    });
  }
}

Tensor FullyShardedDataParallel::forward(const Tensor& x) {
  pre_forward();
  Tensor output = module_->forward(x);
  if ((!GradMode::is_enabled() || !output.requires_grad()) && !full_parameters_held_)
    reshard();  // no backward to come
  return output;
}

void FullyShardedDataParallel::pre_forward() {
  fail_on_checkpointing(*module_);
  RG_CHECK(!backward_started_,
           "FullyShardedDataParallel: forward while a backward is still unfinished");
  gather(units_[0]);
}

void FullyShardedDataParallel::gather_full_parameters() {
  for (FsdpUnit& unit : units_) gather(unit);
  full_parameters_held_ = true;
}

void FullyShardedDataParallel::reshard() {
  full_parameters_held_ = false;
  for (FsdpUnit& unit : units_) free_parameters(unit);
}

// All-gathers the flat buffer, then lends each parameter's Storage its piece of it (no
// copy): the same Storage object as in forward, so autograd's saved tensors see the values.
// Each lent piece holds the flat buffer alive, which goes (and is counted as parameters
// until then) when the last parameter gives its piece back.
void FullyShardedDataParallel::gather(FsdpUnit& unit) {
  if (unit.gathered || unit.params.empty()) return;
  Tensor full = [&] {
    MemoryCategoryScope scope(MemoryCategory::parameters);
    return empty({unit.padded_numel}, unit.shard.dtype(), unit.shard.device());
  }();
  group_.allgather(full, unit.shard)->wait();
  std::shared_ptr<Storage> block = full.storage();
  const size_t element = itemsize(unit.shard.dtype());
  for (size_t k = 0; k < unit.params.size(); ++k) {
    const Tensor& p = params_[unit.params[k]];
    Storage piece(static_cast<char*>(block->data) + size_t(unit.offsets[k]) * element,
                  size_t(p.numel()) * element, block->device,
                  [block](void*, size_t) {});  // gives back only its hold on the block
    exchange_storage_memory(*p.storage(), piece);
  }
  unit.gathered = true;
}

// Each parameter's Storage gives its memory back (it stays, empty, for the next gather).
void FullyShardedDataParallel::free_parameters(FsdpUnit& unit) {
  if (!unit.gathered || full_parameters_held_) return;
  for (size_t i : unit.params) {
    Storage& storage = *params_[i].storage();
    Storage emptied(nullptr, 0, storage.device, {});
    exchange_storage_memory(storage, emptied);
  }  // `emptied` releases the memory (and its accounting) here
  unit.gathered = false;
}

// A backward will come: the output's gradient arrives just before the unit's backward, and
// its hook gathers the unit again (when it was resharded).
void FullyShardedDataParallel::after_unit_forward(FsdpUnit& unit, const Tensor& output) {
  const bool backward_comes = GradMode::is_enabled() && output.defined() && output.requires_grad();
  if (backward_comes) {
    std::weak_ptr<bool> alive = alive_;
    FsdpUnit* target = &unit;
    register_hook(output, [alive, this, target](const Tensor& grad) {
      if (auto a = alive.lock(); a && *a) gather(*target);
      return grad;
    });
  }
  if (!backward_comes || options_.reshard_after_forward) free_parameters(unit);
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
  if (require_sync_) reduce_scatter_gradients(unit);
  free_parameters(unit);
  // Reduce-scatters already done give their full gradient buffers back now.
  std::erase_if(pending_,
                [](const std::unique_ptr<Pending>& p) { return p->work->is_completed(); });
}

// flat = grad * (1/N) per parameter (the DDP reducer's scaling), padding zero; each .grad is
// released, and rank r receives the sum of slice r: its averaged gradient shard.
void FullyShardedDataParallel::reduce_scatter_gradients(FsdpUnit& unit) {
  NoGradGuard no_grad;
  Tensor full = collective_buffer(unit.padded_numel, unit.shard, MemoryCategory::gradients);
  dist::flat_slice(full, unit.numel, unit.padded_numel - unit.numel).zero_();
  const double scale = 1.0 / group_.size();
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
  if (!unit.grad_shard.defined()) {
    unit.grad_shard = zeros({unit.shard_numel}, unit.shard.dtype(), unit.shard.device());
    tag_memory(*unit.grad_shard.storage(), MemoryCategory::gradients);
  }
  auto pending = std::make_unique<Pending>();
  pending->work = group_.reduce_scatter(unit.grad_shard, full);
  pending->full_gradient = std::move(full);
  pending_.push_back(std::move(pending));
}

// Waits for the reduce-scatters (their buffers go), checks every unit got its gradients.
void FullyShardedDataParallel::finish_backward() {
  backward_started_ = false;
  for (auto& pending : pending_) pending->work->wait();
  pending_.clear();
  std::string missing;
  for (FsdpUnit& unit : units_) {
    if (unit.grads_ready < unit.params.size())
      missing +=
          str(missing.empty() ? "" : ", ", "'", unit.name.empty() ? "root" : unit.name, "' (",
              unit.params.size() - unit.grads_ready, " of ", unit.params.size(), " parameters)");
    unit.grads_ready = 0;
    if (unit.gathered && &unit != &units_[0]) free_parameters(unit);
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
