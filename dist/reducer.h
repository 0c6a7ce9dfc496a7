// Reducer: the gradient bucketer under DistributedDataParallel.
//
// Parameters are assigned to buckets in reverse registration order (backward produces
// gradients roughly in that order), per dtype and device, each bucket one flat buffer of
// at most bucket_cap_bytes (the first one first_bucket_cap_bytes, so communication starts
// early). A parameter's post-accumulate-grad hook copies its gradient into its bucket slot,
// scaled by 1/world in the same pass. When a bucket's last gradient is in, its all-reduce
// starts asynchronously on the group's communication thread while backward goes on;
// buckets are launched strictly in bucket order so that every rank issues the same
// collectives in the same order. At the end of backward the reducer waits for every bucket
// and writes the averaged gradients to .grad. After the first iteration the buckets are
// rebuilt once from the observed gradient-ready order, which rank 0 broadcasts.
//
// Inside no_sync (require_sync = false) the hooks do nothing: gradients accumulate in .grad
// locally, and the first synchronised backward all-reduces the accumulated sums — exactly
// one all-reduce per bucket per optimizer step.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "dist/trace.h"

namespace rg::dist {

// A communication hook gets the bucket's flat buffer (already scaled by 1/world) and
// returns a Work whose completion leaves the reduced values in that buffer.
using CommHook = std::function<std::shared_ptr<Work>(ProcessGroup& group, const Tensor& bucket)>;

// The default: sum all-reduce of the pre-scaled buffer, i.e. the average.
std::shared_ptr<Work> allreduce_hook(ProcessGroup& group, const Tensor& bucket);
// Casts to bf16, all-reduces, casts back into the bucket (halves the bytes on the wire).
std::shared_ptr<Work> bf16_compress_hook(ProcessGroup& group, const Tensor& bucket);

struct ReducerOptions {
  size_t bucket_cap_bytes = size_t(25) << 20;
  size_t first_bucket_cap_bytes = size_t(1) << 20;
  bool gradient_as_bucket_view = false;
  bool find_unused_parameters = false;
  bool overlap = true;  // false: launch every bucket only after backward (for comparison)
  CommHook comm_hook = allreduce_hook;
  std::shared_ptr<TraceRecorder> trace;  // null: no timeline
};

struct BucketStats {
  uint64_t buckets_launched = 0;  // over the reducer's life
  double comm_seconds = 0;        // last synchronised step: sum over buckets
  double hidden_seconds = 0;      // last step: communication that overlapped backward
};

class Reducer {
 public:
  // params in registration order; all must require grad.
  Reducer(std::vector<Tensor> params, std::vector<std::string> names, ProcessGroup& group,
          ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Called before each forward: checks the previous iteration finished cleanly.
  void prepare_for_forward();
  void set_require_sync(bool sync) { require_sync_ = sync; }
  bool require_sync() const { return require_sync_; }

  // Bucket layout: indices into params, bucket by bucket.
  std::vector<std::vector<size_t>> bucket_assignment() const;
  size_t bucket_count() const { return buckets_.size(); }
  const BucketStats& stats() const { return stats_; }
  bool buckets_rebuilt() const { return rebuilt_; }

 private:
  struct Bucket {
    Tensor buffer;                 // flat, one dtype and device
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // element offset of each param in buffer
    size_t pending = 0;            // gradients still to arrive this backward
    std::shared_ptr<Work> work;
    std::chrono::steady_clock::time_point launched_at;
    std::chrono::steady_clock::time_point done_at;  // first time seen completed
    bool done_seen = false;
  };

  void build_buckets(const std::vector<size_t>& order);
  void mark_ready(size_t param_index);
  void launch_ready_buckets();
  // Notes the time at which in-flight buckets are first seen completed (polled from the
  // hooks, so the timeline's resolution is one backward node).
  void poll_completions();
  void finalize_backward();
  void reset_for_next_backward();
  void rebuild_from_ready_order();
  Tensor slot_of(size_t param_index) const;

  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  ProcessGroup& group_;
  ReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // param -> bucket
  std::vector<size_t> index_in_bucket_;
  std::vector<bool> ready_;
  std::vector<size_t> ready_order_;  // this backward
  size_t next_bucket_to_launch_ = 0;
  bool require_sync_ = true;
  bool backward_started_ = false;
  bool rebuilt_ = false;
  bool iteration_done_ = false;
  std::string error_;  // sticky failure of the last backward
  std::chrono::steady_clock::time_point backward_start_;
  BucketStats stats_;
  std::shared_ptr<bool> alive_;  // hooks outlive the reducer; they check this
};

}  // namespace rg::dist
