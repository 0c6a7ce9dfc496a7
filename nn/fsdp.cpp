// FullyShardedDataParallel (see nn/fsdp.h): the units and their shards, the hooks, and the
// entry points around forward (the gathers, frees and reduce-scatters themselves are in
// fsdp_communication.cpp).
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

namespace {

Tensor flat(const Tensor& t) { return t.detach().reshape({-1}); }

}  // namespace

FsdpNoSyncGuard::FsdpNoSyncGuard(FullyShardedDataParallel* fsdp) : fsdp_(fsdp) {
  if (!fsdp_) return;
  previous_ = fsdp_->require_sync();
  fsdp_->set_require_sync(false);
}
FsdpNoSyncGuard::FsdpNoSyncGuard(FsdpNoSyncGuard&& other) noexcept
    : fsdp_(other.fsdp_), previous_(other.previous_) {
  other.fsdp_ = nullptr;
}
FsdpNoSyncGuard::~FsdpNoSyncGuard() {
  if (fsdp_) fsdp_->set_require_sync(previous_);
}

FullyShardedDataParallel::FullyShardedDataParallel(std::shared_ptr<Module> module,
                                                   dist::ProcessGroup& group, FSDPOptions options)
    : module_(std::move(module)),
      group_(group),
      options_(options),
      alive_(std::make_shared<bool>(true)) {
  RG_CHECK(module_ != nullptr, "FullyShardedDataParallel: no module");
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

// Collectives still in flight write into buffers this object owns: wait for them (a failed
// group's error has been thrown elsewhere already).
FullyShardedDataParallel::~FullyShardedDataParallel() {
  *alive_ = false;
  auto settle = [](const std::shared_ptr<dist::Work>& work) {
    try {
      if (work) work->wait();
    } catch (const std::exception&) {
    }
  };
  for (auto& pending : pending_) settle(pending->work);
  for (FsdpUnit& unit : units_) settle(unit.gather_work);
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
    Tensor full = [&] {
      ShareableAllocations shared;  // peers of this host may map it
      return zeros({unit.padded_numel}, first.dtype(), first.device());
    }();
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
      if (auto a = alive.lock(); a && *a) before_unit_forward(u);
    });
    unit_modules_[u]->register_forward_hook([alive, this, u](Module&, const Tensor& output) {
      if (auto a = alive.lock(); a && *a) after_unit_forward(u, output);
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

}  // namespace rg::nn
