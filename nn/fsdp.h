// FullyShardedDataParallel: ZeRO stage 3 (Rajbhandari et al., 2020; PyTorch's FSDP). Each
// rank keeps only its 1/N shard of every parameter, gradient and (with optim::FsdpAdamW)
// optimizer state between steps; whole parameters exist only around the computation of
// the unit that uses them.
//
// Units: every nn::Block in the module tree is one unit (FSDP's auto-wrap by transformer
// block); the parameters outside any Block (embeddings, ln_f, the tied lm_head) form the
// root unit. A unit's parameters are laid end to end in one flat buffer padded to a
// multiple of the world size N; rank r keeps elements [r n/N, (r+1) n/N) (its shard, the
// master copy). Per step:
//   forward   pre_forward() gathers the root; a unit's forward pre-hook all-gathers its flat
//             buffer and lends each parameter its piece; its forward hook frees them again
//             (reshard_after_forward) and hooks the unit's output, whose gradient arrives
//             just before the unit's backward: that hook gathers the unit again.
//   backward  as a unit's last parameter gradient is accumulated (post-accumulate-grad
//             hooks), its flat gradient buffer (whose views the .grad were, or into which
//             accumulated .grad are copied) is scaled by 1/N (as the DDP reducer does) and
//             reduce-scattered into the unit's gradient shard, each .grad is released and the
//             parameters are freed; a buffer goes when its reduce-scatter is seen complete.
//   prefetch  the next unit's all-gather is issued as a unit starts its forward (the
//             previous one's as it starts its backward): it runs while this unit computes.
// Activation checkpointing composes: the recomputation in backward runs the unit's forward
// hooks again, which gather it and keep it for the backward that follows.
// Freeing keeps the parameter's Storage object and gives back only its memory
// (rg::exchange_storage_memory), so tensors autograd saved in forward see the values again
// once the unit is re-gathered. The root is not resharded after forward (its output is the
// first thing backward needs) and is freed when its gradients are reduced.
// Inside no_sync() .grad accumulates the full local gradient of every parameter (as FSDP
// without sharded accumulation): one full gradient per rank until the synchronising
// micro-batch, whose backward reduce-scatters the sums and releases them.
// Between steps a module's parameters hold no memory: call gather_full_parameters() before
// reading them outside forward (evaluation, checkpoints), then reshard().
// Module::to() replaces the parameters' storages: convert the module before wrapping it.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "dist/trace.h"
#include "nn/module.h"

namespace rg::nn {

struct FSDPOptions {
  // Free each Block's parameters after its forward and gather them again for its backward
  // (false: keep them from forward to the end of the unit's backward; FSDP's SHARD_GRAD_OP).
  bool reshard_after_forward = true;
  // Issue the next unit's all-gather as a unit starts its forward (and the previous one's as
  // it starts its backward), so that it runs while this unit computes (nn/fsdp_communication.cpp).
  bool prefetch = true;
  std::shared_ptr<dist::TraceRecorder> trace;  // set to record gathers, reduce-scatters, compute
  // The dtype of the gradients' reduce-scatter (bf16: half the bytes on the wire; the shards
  // and the optimizer stay in the parameters' dtype). Unset: the parameters' dtype.
  std::optional<DType> reduce_dtype;
  // Reduce-scatters allowed still in flight when a unit's backward starts (and allocates its
  // flat gradient): older ones are waited for first, so that their full gradient buffers go
  // (PyTorch FSDP's limit_all_gathers, on the gradient side). 1 keeps the previous unit's
  // running beside this unit's backward; 0: no limit.
  size_t max_reduce_scatters_in_flight = 1;
};

// One unit: its parameters (indices into FullyShardedDataParallel::params()), where each
// lies in the flat buffer, and this rank's shards.
struct FsdpUnit {
  std::string name;  // "" for the root, else the module's path ("transformer.h.0")
  std::vector<size_t> params;
  std::vector<int64_t> offsets;  // first element of each parameter in the flat buffer
  int64_t numel = 0;             // sum of the parameters' elements
  int64_t padded_numel = 0;      // numel rounded up to a multiple of the world size
  int64_t shard_numel = 0;       // padded_numel / world
  int64_t shard_start = 0;       // rank * shard_numel
  Tensor shard;                  // [shard_numel] this rank's master parameters
  Tensor grad_shard;  // [shard_numel] the averaged gradient after a synchronised backward
  bool gathered = false;
  size_t grads_ready = 0;  // parameters whose gradient is accumulated in this backward
  // The flat gradient buffer whose views are the parameters' .grad during this unit's
  // synchronised backward (when no accumulated .grad came before it).
  Tensor flat_gradient;
  // An all-gather on its way (prefetched, or waited for at once) and its flat buffer.
  Tensor gathering;
  std::shared_ptr<dist::Work> gather_work;
  std::chrono::steady_clock::time_point gather_issued, gather_done, compute_start;
  bool gather_done_seen = false;
};

class FullyShardedDataParallel;

// RAII: while alive, backward accumulates full gradients in .grad with no communication.
class FsdpNoSyncGuard {
 public:
  explicit FsdpNoSyncGuard(FullyShardedDataParallel* fsdp = nullptr);
  FsdpNoSyncGuard(FsdpNoSyncGuard&& other) noexcept;
  FsdpNoSyncGuard& operator=(FsdpNoSyncGuard&& other) = delete;
  ~FsdpNoSyncGuard();

 private:
  FullyShardedDataParallel* fsdp_ = nullptr;
  bool previous_ = true;
};

class FullyShardedDataParallel {
 public:
  // Collective: broadcasts rank 0's parameters, keeps this rank's shards and frees the rest.
  FullyShardedDataParallel(std::shared_ptr<Module> module, dist::ProcessGroup& group,
                           FSDPOptions options = {});
  ~FullyShardedDataParallel();
  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;

  // pre_forward() then the module's forward; without a backward to come (no grad), every
  // unit is freed afterwards. For other forward signatures call pre_forward() then the module.
  Tensor forward(const Tensor& x);
  void pre_forward();
  [[nodiscard]] FsdpNoSyncGuard no_sync() { return FsdpNoSyncGuard(this); }
  void set_require_sync(bool sync) { require_sync_ = sync; }
  bool require_sync() const { return require_sync_; }

  // Collective: every unit gathered (the module reads as a whole model, and forwards on
  // one rank alone, e.g. evaluation, gather and free nothing) until reshard().
  void gather_full_parameters();
  void reshard();
  bool holds_full_parameters() const { return full_parameters_held_; }

  Module& module() { return *module_; }
  dist::ProcessGroup& group() const { return group_; }
  const FSDPOptions& options() const { return options_; }
  const std::vector<Tensor>& params() const { return params_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<FsdpUnit>& units() const { return units_; }
  uint64_t synchronized_backwards() const { return synchronized_backwards_; }
  // All-gathers issued ahead of the unit that needs them (FSDPOptions::prefetch).
  uint64_t prefetched_gathers() const { return prefetched_gathers_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Pending {         // a reduce-scatter in flight
    std::string unit;      // for the trace
    Tensor full_gradient;  // its input: alive until it completes
    Tensor reduced;        // with a reduce_dtype: its output, cast into *grad_shard when done
    Tensor* grad_shard = nullptr;
    std::shared_ptr<dist::Work> work;
    Clock::time_point issued;
  };
  void plan_units();
  void shard_parameters();
  void register_hooks();
  // nn/fsdp_communication.cpp
  bool start_gather(FsdpUnit& unit);  // whether it issued one
  void gather(FsdpUnit& unit);
  void free_parameters(FsdpUnit& unit);
  void poll_completions();
  void limit_reduce_scatters();
  std::string unit_label(const FsdpUnit& unit) const;
  void before_unit_forward(size_t u);
  void after_unit_forward(size_t u, const Tensor& output);
  void before_unit_backward(size_t u);
  void on_gradient_ready(size_t u);
  void accumulate_into_flat_gradient(FsdpUnit& unit);
  Tensor flat_scaled_gradient(FsdpUnit& unit);
  void reduce_scatter_gradients(FsdpUnit& unit);
  void finish_backward();

  std::shared_ptr<Module> module_;
  dist::ProcessGroup& group_;
  FSDPOptions options_;
  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  std::vector<size_t> unit_of_;                        // per parameter
  std::vector<std::shared_ptr<Module>> unit_modules_;  // per unit; null for the root
  std::vector<FsdpUnit> units_;
  std::vector<std::unique_ptr<Pending>> pending_;
  bool require_sync_ = true;
  bool backward_started_ = false;
  bool full_parameters_held_ = false;  // between gather_full_parameters() and reshard()
  uint64_t synchronized_backwards_ = 0;
  uint64_t prefetched_gathers_ = 0;
  std::shared_ptr<bool> alive_;  // hooks outlive this object; they check it
};

}  // namespace rg::nn
