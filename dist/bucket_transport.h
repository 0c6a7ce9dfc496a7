// BucketTransport: the communication half of data-parallel gradient averaging, knowing
// tensors and process groups but no autograd (the hooks that fill it are nn::Reducer's).
//
// Members (gradients, in the reducer's use) are laid out in buckets, each one flat buffer
// of one dtype and device: plan_buckets() fills them in the given order (reverse
// registration order at first, since backward produces gradients roughly in that order),
// closing a bucket at bucket_cap_bytes (the first one at first_bucket_cap_bytes, so
// communication starts early). A member's data is copied into its slot by the caller; when
// a bucket's last member is in, the bucket may be launched: its comm hook (an all-reduce by
// default) starts asynchronously on the group's communication thread. Buckets are launched
// strictly in bucket order so that every rank issues the same collectives in the same
// order. wait_all() waits in launch order and accounts how much communication overlapped
// the work done meanwhile (backward), for the stats and the timeline. On a transport whose
// collectives complete on device streams (dist/stream_work.h) it does not wait for the
// communication on the host: once every bucket's collective is queued on the communication
// stream, the caller's stream waits for the last one (they run in order there), once. There
// the host's clock says nothing of when the device communicated, so the figures come from
// device events: each bucket's collective between its started and done events on the
// communication stream, backward's end an event on the compute stream (mark_backward_end),
// hidden = the part of each collective before that end. They are read once the events are
// complete (stats(), typically after the step's loss read); until then stats() gives the
// host clock's figure and says so.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/memory_category.h"
#include "core/tensor.h"
#include "dist/process_group.h"
#include "dist/trace.h"
#include "kernels/cuda/stream.h"

namespace rg::dist {

// A communication hook gets the bucket's flat buffer (already scaled by 1/world) and
// returns a Work whose completion leaves the reduced values in that buffer.
using CommHook = std::function<std::shared_ptr<Work>(ProcessGroup& group, const Tensor& bucket)>;

// The default: sum all-reduce of the pre-scaled buffer, i.e. the average.
std::shared_ptr<Work> allreduce_hook(ProcessGroup& group, const Tensor& bucket);
// ZeRO stage 1: a sum reduce-scatter of the pre-scaled buffer, i.e. the average, of which
// each rank keeps only its own slice: elements [rank * n/world, (rank + 1) * n/world) of
// the bucket (n a multiple of world, see BucketTransport::assign). The rest is stale.
std::shared_ptr<Work> reduce_scatter_hook(ProcessGroup& group, const Tensor& bucket);
// Casts to bf16, all-reduces, casts back into the bucket (halves the bytes on the wire).
std::shared_ptr<Work> bf16_compress_hook(ProcessGroup& group, const Tensor& bucket);

struct BucketStats {
  uint64_t buckets_launched = 0;  // over the transport's life
  double comm_seconds = 0;        // last wait_all: sum over buckets
  double hidden_seconds = 0;      // last wait_all: communication that overlapped the caller's work
  size_t buffers_lent = 0;        // last wait_all: buckets that reduced a lent gradient
  // What comm_seconds and hidden_seconds were measured with: "device events" (collectives on
  // device streams, once their events are complete) or "host clock".
  const char* clock = "host clock";
};

// Members `order` (indices into `members`) grouped into buckets: per dtype and device, in
// order, each closed once it holds at least its cap in bytes. A member of at least
// `alone_bytes` closes the bucket being filled and gets one of its own (so that its gradient
// can be reduced where it lies, see Reducer::adopt_gradient).
std::vector<std::vector<size_t>> plan_buckets(const std::vector<Tensor>& members,
                                              const std::vector<size_t>& order,
                                              size_t first_bucket_cap_bytes,
                                              size_t bucket_cap_bytes,
                                              size_t alone_bytes = SIZE_MAX);

class BucketTransport {
 public:
  using Clock = std::chrono::steady_clock;

  BucketTransport(ProcessGroup& group, CommHook hook, std::shared_ptr<TraceRecorder> trace);
  ~BucketTransport();  // waits for buckets still in flight
  BucketTransport(const BucketTransport&) = delete;
  BucketTransport& operator=(const BucketTransport&) = delete;

  // Allocates one zeroed flat buffer per bucket of `layout` (indices into members, whose
  // numel, dtype and device it uses), padded with zeros to a multiple of `pad_multiple`
  // elements; drops the previous buckets.
  void assign(const std::vector<Tensor>& members, const std::vector<std::vector<size_t>>& layout,
              int64_t pad_multiple = 1);
  // ZeRO stage 2 (call before assign): once its reduce-scatter is seen completed (by
  // poll_completions during backward, or wait_all) each bucket keeps only this rank's slice
  // in a persistent shard buffer (1/world of the bucket) and frees its full buffer;
  // ensure_buffer() allocates that again for the next round.
  void set_sharded(bool sharded) { sharded_ = sharded; }
  bool sharded() const { return sharded_; }
  // Allocates bucket b's full buffer if it was released (padding zeroed; the slots are the
  // caller's to fill). A no-op when it exists.
  void ensure_buffer(size_t bucket);
  bool has_buffer(size_t bucket) const { return buckets_.at(bucket).buffer.defined(); }
  // Bucket b's padded element count, whether or not its full buffer exists.
  int64_t bucket_numel(size_t bucket) const { return buckets_.at(bucket).numel; }
  // This rank's slice of bucket b (elements [rank n/world, (rank+1) n/world)): the shard
  // buffer once sharded, else a view of the full buffer. Where a reduce-scatter leaves the
  // averaged gradient, and where a sharded optimizer reads it.
  Tensor shard(size_t bucket) const;
  // Bytes of the full buffers and of the shard buffers alive now (stage 2's memory).
  size_t buffer_bytes() const;
  // The flat slot of member i in its bucket's buffer (which must exist).
  Tensor slot(size_t member) const;
  // Bucket b's whole flat buffer (padding included), and where member i's slot starts in it.
  const Tensor& buffer(size_t bucket) const { return buckets_.at(bucket).buffer; }
  int64_t offset_in_bucket(size_t member) const;
  size_t bucket_of(size_t member) const { return bucket_of_.at(member); }
  // Gives bucket b a new buffer of the same layout (its padding zeroed) and returns the old
  // one: the reducer hands finished slots to .grad as they are instead of copying them out.
  Tensor replace_buffer(size_t bucket);
  // Bucket b, of one member, reduces `flat` (that member's data: contiguous, of the buffer's
  // numel, dtype and device) in place of its buffer until release_adopted(b) or reset(): the
  // reducer lends it a gradient that only its parameter holds instead of copying it in.
  void adopt_buffer(size_t bucket, const Tensor& flat);
  // Whether adopt_buffer(b, t) would take t (t's shape aside: it lends t's data flat).
  bool can_adopt(size_t bucket, const Tensor& t) const;
  bool adopted(size_t bucket) const { return buckets_.at(bucket).own_buffer.defined(); }
  // Bucket b reduces its own buffer again.
  void release_adopted(size_t bucket);
  // Member i's data is in its slot; returns whether that completed its bucket.
  bool mark_filled(size_t member);
  // Launches, in bucket order, every bucket not yet launched whose members are all in.
  void launch_ready();
  bool all_launched() const { return next_to_launch_ == buckets_.size(); }
  // Notes when in-flight buckets are first seen completed (the timeline's resolution is the
  // caller's polling).
  void poll_completions();
  // Backward's end on the device: a timing event on the buckets' device's current stream
  // (the compute stream), for the device-event figures of the next wait_all. Call it before
  // launching the buckets still waiting (a no-op on the cpu).
  void mark_backward_end();
  // Waits for every launched bucket in launch order. `started` is when the caller's
  // overlapping work began (backward), `ended` when it ended.
  void wait_all(Clock::time_point started, Clock::time_point ended);
  // Every bucket back to empty for the next round (in-flight works are dropped, lent
  // buffers released).
  void reset();

  size_t bucket_count() const { return buckets_.size(); }
  std::vector<std::vector<size_t>> assignment() const;
  // The last round's figures: from device events once they are complete (see above).
  const BucketStats& stats() const;
  ProcessGroup& group() const { return group_; }

 private:
  struct Bucket {
    Tensor buffer;      // flat, one dtype and device
    Tensor own_buffer;  // defined while `buffer` is a lent gradient (adopted)
    Tensor shard;       // sharded: this rank's slice, kept between rounds
    int64_t numel = 0;  // padded
    DType dtype = DType::f32;
    Device device = kCPU;
    std::vector<size_t> members;   // indices into the members given to assign()
    std::vector<int64_t> offsets;  // element offset of each member in buffer
    std::vector<int64_t> numels;
    size_t pending = 0;  // members still to arrive this round
    std::shared_ptr<Work> work;
    Clock::time_point launched_at;
    Clock::time_point done_at;  // first time seen completed
    bool done_seen = false;
  };

  ProcessGroup& group_;
  CommHook hook_;
  std::shared_ptr<TraceRecorder> trace_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // member -> bucket
  std::vector<size_t> index_in_bucket_;
  size_t next_to_launch_ = 0;
  mutable BucketStats stats_;
  bool sharded_ = false;
  // Device events of the last round's collectives (started, done) and of backward's end,
  // until stats() has read them.
  struct DeviceTiming {
    std::vector<std::pair<std::shared_ptr<gpu::Event>, std::shared_ptr<gpu::Event>>> buckets;
    std::shared_ptr<gpu::Event> backward_end;
  };
  std::shared_ptr<gpu::Event> backward_end_;  // this round's mark_backward_end
  mutable std::optional<DeviceTiming> timing_;

  Tensor new_buffer(const Bucket& bucket, int64_t numel, MemoryCategory category) const;
  // Device streams: waits until every launched bucket is queued, then orders the current
  // stream after the last; false (nothing done) when some bucket's work is not on a stream.
  bool wait_on_stream();
  // The round's device events, when every bucket and backward's end have them.
  std::optional<DeviceTiming> device_timing() const;
  void keep_shard_only(Bucket& bucket);
};

}  // namespace rg::dist
