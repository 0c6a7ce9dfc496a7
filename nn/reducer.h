// Reducer: the autograd half of DistributedDataParallel's gradient averaging; the buckets
// and their communication are dist::BucketTransport's (dist/bucket_transport.h).
//
// Each parameter's post-accumulate-grad hook copies its gradient into its bucket slot,
// scaled by 1/world in the same pass, and marks it filled; a bucket whose last gradient is
// in is launched while backward goes on. A parameter of half a bucket or more gets a bucket
// of its own, and when only it holds its fresh gradient, that gradient is lent to the bucket
// instead (scaled in place, reduced where it lies: no copy in, none out); not with
// gradient_as_bucket_view or ZeRO, whose buckets keep their own buffers. At the end of backward
// (queue_callback) the reducer finishes the iteration in phases: unused parameters, all buckets
// launched and waited for, the averaged gradients written to .grad (a gradient that only its
// parameter holds is replaced by its slot, and that bucket gets a new buffer), and — after the
// first iteration — the buckets rebuilt once from the observed gradient-ready order, which rank 0
// broadcasts so that every rank builds the same buckets.
//
// Inside no_sync (require_sync = false) the hooks do nothing: gradients accumulate in .grad
// locally, and the first synchronised backward all-reduces the accumulated sums — exactly
// one all-reduce per bucket per optimizer step.
//
// Uneven inputs (nn/join.h): a rank that has run out of data is marked joined; instead of
// backward it calls shadow_backward(), which all-reduces zeros through the same buckets in
// the same order and receives the others' average, and a real backward on it is an error.
//
// ZeRO stage 1 (zero_stage = 1): buckets are padded to a multiple of the world size, each
// is reduce-scattered instead of all-reduced (dist::reduce_scatter_hook), and the layout is
// never rebuilt. The averaged gradient then exists only as each rank's slice of each bucket,
// for a sharded optimizer (optim::ZeroAdamW) to read; .grad keeps the local sum.
//
// ZeRO stage 2 (zero_stage = 2): as stage 1, and gradient memory shrinks to ~1/N. Once a
// parameter's gradient is in its bucket slot during a synchronised backward, its .grad is
// released (undefined); a bucket's full buffer exists only from the first write of a
// synchronised backward until its reduce-scatter completes, after which only this rank's
// slice stays, in a persistent shard buffer (BucketTransport::set_sharded, shard()). Inside
// no_sync .grad still accumulates the full local gradient (as PyTorch FSDP does without
// sharded accumulation): gradient accumulation costs one full gradient per rank meanwhile.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dist/bucket_transport.h"
#include "dist/process_group.h"
#include "dist/trace.h"

namespace rg::nn {

struct ReducerOptions {
  size_t bucket_cap_bytes = size_t(25) << 20;
  size_t first_bucket_cap_bytes = size_t(1) << 20;
  bool gradient_as_bucket_view = false;
  bool find_unused_parameters = false;
  bool overlap = true;  // false: launch every bucket only after backward (for comparison)
  dist::CommHook comm_hook = dist::allreduce_hook;
  std::shared_ptr<dist::TraceRecorder> trace;  // null: no timeline
  int zero_stage = 0;  // 1: reduce-scatter into shards (replaces comm_hook); 2: also frees
                       // .grad and the full bucket buffers (see above)
};

class Reducer {
 public:
  // params in registration order; all must require grad.
  Reducer(std::vector<Tensor> params, std::vector<std::string> names, dist::ProcessGroup& group,
          ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Called before each forward: checks the previous iteration finished cleanly.
  void prepare_for_forward();
  void set_require_sync(bool sync) { require_sync_ = sync; }
  bool require_sync() const { return require_sync_; }
  // A joined rank (nn/join.h) contributes zeros through shadow_backward(); its backward throws.
  void set_joined(bool joined) { joined_ = joined; }
  bool joined() const { return joined_; }
  // A joined rank's stand-in for a synchronised backward: the same bucket all-reduces with
  // zero contributions, and the averaged gradients written to .grad as backward would.
  void shadow_backward();
  // Synchronised backwards (and shadow backwards) completed so far.
  uint64_t synchronized_backwards() const { return synchronized_backwards_; }

  // Bucket layout: indices into params, bucket by bucket.
  std::vector<std::vector<size_t>> bucket_assignment() const { return transport_.assignment(); }
  size_t bucket_count() const { return transport_.bucket_count(); }
  const dist::BucketStats& stats() const { return transport_.stats(); }
  bool buckets_rebuilt() const { return rebuilt_; }
  // For sharded optimizers: the reduced parameters, their buckets, the ZeRO stage.
  const std::vector<Tensor>& params() const { return params_; }
  const dist::BucketTransport& transport() const { return transport_; }
  dist::ProcessGroup& group() const { return group_; }
  int zero_stage() const { return options_.zero_stage; }

 private:
  using Clock = std::chrono::steady_clock;

  void build_buckets(const std::vector<size_t>& order);
  void mark_ready(size_t param_index);
  // The end of backward, phase by phase.
  void finalize_backward();
  // Launches what is left, waits, writes .grad; rebuilds the buckets after the first time.
  void complete_iteration(Clock::time_point backward_end, std::vector<size_t> order);
  void fail_for_backward_after_join(size_t param_index);
  std::vector<std::string> contribute_unused_parameters();
  void fail_for_missing_gradients(const std::vector<std::string>& missing);
  void write_averaged_gradients();
  void rebuild_from_ready_order(std::vector<size_t> order);
  void reset_for_next_backward();
  // Gradients may be lent to their buckets (reduced where they lie): neither
  // gradient_as_bucket_view nor ZeRO, whose buckets must keep their own buffers.
  bool lends_gradients() const;
  // Lends .grad to its bucket when it is alone there and only its parameter holds it,
  // scaled by 1/world in place; returns whether it did.
  bool adopt_gradient(size_t param_index);
  // slot = grad * (1/world), in place when .grad already is the slot, zero without a .grad.
  // Returns whether it copied from a separate .grad.
  bool scale_into_slot(size_t param_index);
  // ZeRO-2: drops the parameter's .grad once its gradient is in the bucket.
  void release_local_gradient(size_t param_index);

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  dist::ProcessGroup& group_;
  ReducerOptions options_;
  dist::BucketTransport transport_;
  std::vector<bool> ready_;
  std::vector<size_t> ready_order_;  // this backward
  bool require_sync_ = true;
  bool backward_started_ = false;
  bool rebuilt_ = false;
  bool joined_ = false;
  uint64_t synchronized_backwards_ = 0;
  std::string error_;  // sticky failure of the last backward
  Clock::time_point backward_start_;
  std::shared_ptr<bool> alive_;  // hooks outlive the reducer; they check this
};

}  // namespace rg::nn
