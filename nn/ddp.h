// DistributedDataParallel: wraps a Module so that backward averages gradients across the
// ranks of a ProcessGroup, overlapping the all-reduce with backward (see nn/reducer.h).
//
//   auto ddp = rg::nn::DistributedDataParallel(model, group);   // checks + broadcasts rank 0's
//   weights for (micro-batch k) {
//     auto guard = k + 1 < steps ? ddp.no_sync() : rg::nn::NoSyncGuard();  // sync on the last one
//     loss_of(ddp.forward(x)).backward();
//   }
//   optimizer.step();
//
// Ranks with different numbers of batches: see nn/join.h (rg::nn::Join).
#pragma once
#include <memory>
#include <optional>

#include "nn/module.h"
#include "nn/reducer.h"

namespace rg::nn {

struct DDPOptions {
  double bucket_cap_mb = 25;       // PyTorch's default
  double first_bucket_cap_mb = 1;  // small first bucket: communication starts early
  bool gradient_as_bucket_view = false;
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;
  bool overlap = true;
  dist::CommHook comm_hook = dist::allreduce_hook;
  std::shared_ptr<dist::TraceRecorder> trace;  // set to record a timeline
  // Every N steps, compare a 64-bit hash of each parameter across ranks (0 = never); also
  // enabled by the environment variable RG_DDP_CHECK_EVERY.
  int consistency_check_every = 0;
  // ZeRO stage 1: 1 reduce-scatters the gradients so that each rank holds the average of
  // its 1/world slice of every bucket (comm_hook is ignored); step with optim::ZeroAdamW.
  // Stage 2 also releases each .grad once it is in its bucket and keeps only the slice of
  // each bucket between backwards (nn/reducer.h): gradient memory ~1/world per rank.
  int zero_stage = 0;
};

class DistributedDataParallel;

// RAII: while alive, backward accumulates gradients locally with no communication.
class NoSyncGuard {
 public:
  NoSyncGuard() = default;
  explicit NoSyncGuard(Reducer* reducer);
  NoSyncGuard(NoSyncGuard&& other) noexcept;
  NoSyncGuard& operator=(NoSyncGuard&& other) noexcept;
  ~NoSyncGuard();

 private:
  Reducer* reducer_ = nullptr;
  bool previous_ = true;
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<Module> module, dist::ProcessGroup& group,
                          DDPOptions options = {});

  // Runs the module's forward after the per-iteration bookkeeping (buffer broadcast,
  // checks). For modules with other forward signatures, call pre_forward() then the module.
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }
  void pre_forward();
  // The once-per-step bookkeeping pre_forward does (buffers broadcast from `buffer_root`,
  // the consistency check). While a Join is active (nn/join.h), pre_forward leaves it to the
  // Join, which calls this once per step on every rank, joined or not.
  void synchronize_step_state(int buffer_root);
  void set_join_active(bool active) { join_active_ = active; }
  bool join_active() const { return join_active_; }
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(reducer_.get()); }

  Module& module() { return *module_; }
  std::shared_ptr<Module> module_ptr() { return module_; }
  Reducer& reducer() { return *reducer_; }
  dist::ProcessGroup& group() { return group_; }
  // Compares a 64-bit hash of every parameter across ranks; throws naming the first
  // parameter that differs and the ranks involved.
  void check_parameters_consistent();

 private:
  void verify_same_parameters();
  void broadcast_state();

  std::shared_ptr<Module> module_;
  dist::ProcessGroup& group_;
  DDPOptions options_;
  std::unique_ptr<Reducer> reducer_;
  int64_t steps_ = 0;
  bool join_active_ = false;
};

}  // namespace rg::nn
