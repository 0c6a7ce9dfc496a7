// The buckets' layout, launches and waits; see bucket_transport.h.
#include "dist/bucket_transport.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "core/memory_accounting.h"
#include "core/shareable_host_memory.h"
#include "dist/buffer_math.h"
#include "dist/stream_work.h"
#include "kernels/builtin.h"

namespace rg::dist {

std::shared_ptr<Work> allreduce_hook(ProcessGroup& group, const Tensor& bucket) {
  return group.allreduce(bucket, CombineOp::sum);
}

std::shared_ptr<Work> reduce_scatter_hook(ProcessGroup& group, const Tensor& bucket) {
  int64_t shard = bucket.numel() / group.size();
  RG_CHECK(shard * group.size() == bucket.numel(), "reduce_scatter_hook: bucket of ",
           bucket.numel(), " elements is not a multiple of world size ", group.size());
  // The ring reduces a copy of its input, so the output may be a slice of it.
  return group.reduce_scatter(flat_slice(bucket, group.rank() * shard, shard), bucket,
                              CombineOp::sum);
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
  Tensor compressed = [&] {
    ShareableAllocations shared;  // the all-reduce may let peers map it
    return empty(bucket.shape(), DType::bf16, bucket.device());
  }();
  copy_buffer(compressed, bucket);
  auto work = group.allreduce(compressed, CombineOp::sum);
  return std::make_shared<ThenWork>(work,
                                    [bucket, compressed] { copy_buffer(bucket, compressed); });
}

std::vector<std::vector<size_t>> plan_buckets(const std::vector<Tensor>& members,
                                              const std::vector<size_t>& order,
                                              size_t first_bucket_cap_bytes,
                                              size_t bucket_cap_bytes, size_t alone_bytes) {
  struct Open {
    std::vector<size_t> members;
    size_t bytes = 0;
  };
  std::map<std::pair<int, std::string>, Open> open;  // (dtype, device) -> bucket being filled
  std::vector<std::vector<size_t>> layout;
  for (size_t i : order) {
    const Tensor& m = members[i];
    auto key = std::make_pair(static_cast<int>(m.dtype()), m.device().str());
    Open& b = open[key];
    if (m.nbytes() >= alone_bytes) {
      if (!b.members.empty()) layout.push_back(std::move(b.members));
      open.erase(key);
      layout.push_back({i});
      continue;
    }
    size_t cap = layout.empty() ? first_bucket_cap_bytes : bucket_cap_bytes;
    b.members.push_back(i);
    b.bytes += m.nbytes();
    if (b.bytes >= cap) {
      layout.push_back(std::move(b.members));
      open.erase(key);
    }
  }
  for (auto& [key, b] : open)
    if (!b.members.empty()) layout.push_back(std::move(b.members));
  return layout;
}

BucketTransport::BucketTransport(ProcessGroup& group, CommHook hook,
                                 std::shared_ptr<TraceRecorder> trace)
    : group_(group), hook_(std::move(hook)), trace_(std::move(trace)) {
  RG_CHECK(hook_ != nullptr, "BucketTransport: the comm hook is empty");
}

BucketTransport::~BucketTransport() {
  for (auto& bucket : buckets_)
    if (bucket.work) {
      try {
        bucket.work->wait();
      } catch (...) {  // the error was (or will be) reported through wait_all
      }
    }
}

void BucketTransport::assign(const std::vector<Tensor>& members,
                             const std::vector<std::vector<size_t>>& layout, int64_t pad_multiple) {
  RG_CHECK(pad_multiple >= 1, "BucketTransport::assign: pad_multiple ", pad_multiple);
  buckets_.clear();
  bucket_of_.assign(members.size(), 0);
  index_in_bucket_.assign(members.size(), 0);
  for (const auto& in_bucket : layout) {
    RG_CHECK(!in_bucket.empty(), "BucketTransport: an empty bucket in the layout");
    Bucket bucket;
    int64_t total = 0;
    for (size_t k = 0; k < in_bucket.size(); ++k) {
      size_t i = in_bucket[k];
      RG_CHECK(i < members.size(), "BucketTransport: member ", i, " of ", members.size());
      bucket.offsets.push_back(total);
      bucket.numels.push_back(members[i].numel());
      total += members[i].numel();
      bucket_of_[i] = buckets_.size();
      index_in_bucket_[i] = k;
    }
    total = (total + pad_multiple - 1) / pad_multiple * pad_multiple;
    const Tensor& first = members[in_bucket.front()];
    bucket.numel = total;
    bucket.dtype = first.dtype();
    bucket.device = first.device();
    if (sharded_) {  // the full buffer comes with the first write (ensure_buffer)
      RG_CHECK(total % group_.size() == 0,
               "BucketTransport::assign: sharded buckets must be "
               "padded to a multiple of the world size");
      bucket.shard = new_buffer(bucket, total / group_.size(), MemoryCategory::gradients);
    } else {
      bucket.buffer = new_buffer(bucket, total, MemoryCategory::buckets);
    }
    bucket.members = in_bucket;
    bucket.pending = in_bucket.size();
    buckets_.push_back(std::move(bucket));
  }
  next_to_launch_ = 0;
}

// Zeroed, shareable with peers of this host (they may map it in a collective), tagged.
Tensor BucketTransport::new_buffer(const Bucket& bucket, int64_t numel,
                                   MemoryCategory category) const {
  Tensor buffer = [&] {
    ShareableAllocations shared;
    return empty({numel}, bucket.dtype, bucket.device);
  }();
  tag_memory(*buffer.storage(), category);
  if (numel) RG_KERNEL(bucket.device, fill)(buffer, 0.0);
  return buffer;
}

void BucketTransport::ensure_buffer(size_t b) {
  Bucket& bucket = buckets_.at(b);
  if (bucket.buffer.defined()) return;
  bucket.buffer = new_buffer(bucket, bucket.numel, MemoryCategory::buckets);
}

Tensor BucketTransport::shard(size_t b) const {
  const Bucket& bucket = buckets_.at(b);
  if (bucket.shard.defined()) return bucket.shard;
  const int64_t n = bucket.numel / group_.size();
  return flat_slice(bucket.buffer, group_.rank() * n, n);
}

// After the reduce-scatter: this rank's averaged slice moves to the shard buffer and the
// full buffer goes (the other slices hold stale partial sums).
void BucketTransport::keep_shard_only(Bucket& bucket) {
  const int64_t n = bucket.numel / group_.size();
  copy_buffer(bucket.shard, flat_slice(bucket.buffer, group_.rank() * n, n));
  bucket.buffer = Tensor();
}

size_t BucketTransport::buffer_bytes() const {
  size_t bytes = 0;
  for (const Bucket& bucket : buckets_)
    bytes += (bucket.buffer.defined() ? bucket.buffer.nbytes() : 0) +
             (bucket.shard.defined() ? bucket.shard.nbytes() : 0);
  return bytes;
}

Tensor BucketTransport::slot(size_t i) const {
  const Bucket& bucket = buckets_[bucket_of_[i]];
  RG_CHECK(bucket.buffer.defined(), "BucketTransport::slot: bucket ", bucket_of_[i],
           " has released its full buffer (ensure_buffer first)");
  size_t k = index_in_bucket_[i];
  return flat_slice(bucket.buffer, bucket.offsets[k], bucket.numels[k]);
}

Tensor BucketTransport::replace_buffer(size_t b) {
  Bucket& bucket = buckets_.at(b);
  RG_CHECK(!bucket.work && !adopted(b), "BucketTransport::replace_buffer: bucket ", b,
           " is in flight or reduces a lent gradient");
  Tensor old = bucket.buffer;
  {
    ShareableAllocations shared;
    bucket.buffer = empty(old.shape(), old.dtype(), old.device());
  }
  tag_memory(*bucket.buffer.storage(), MemoryCategory::buckets);
  const int64_t used = bucket.offsets.back() + bucket.numels.back();
  if (used < old.numel())
    RG_KERNEL(old.device(), fill)(flat_slice(bucket.buffer, used, old.numel() - used), 0.0);
  return old;
}

bool BucketTransport::can_adopt(size_t b, const Tensor& t) const {
  const Bucket& bucket = buckets_.at(b);
  return !bucket.work && !adopted(b) && bucket.members.size() == 1 && t.is_contiguous() &&
         t.numel() == bucket.buffer.numel() && t.dtype() == bucket.buffer.dtype() &&
         t.device() == bucket.buffer.device();
}

void BucketTransport::adopt_buffer(size_t b, const Tensor& flat) {
  RG_CHECK(can_adopt(b, flat), "BucketTransport::adopt_buffer: bucket ", b,
           " cannot reduce a tensor of ", flat.numel(), " elements in place of its buffer of ",
           buckets_.at(b).buffer.numel());
  Bucket& bucket = buckets_[b];
  bucket.own_buffer = std::move(bucket.buffer);
  bucket.buffer = flat;
}

void BucketTransport::release_adopted(size_t b) {
  Bucket& bucket = buckets_.at(b);
  RG_CHECK(!bucket.work, "BucketTransport::release_adopted: bucket ", b, " is in flight");
  if (!adopted(b)) return;
  bucket.buffer = std::move(bucket.own_buffer);
  bucket.own_buffer = Tensor();
}

int64_t BucketTransport::offset_in_bucket(size_t i) const {
  return buckets_[bucket_of_[i]].offsets[index_in_bucket_[i]];
}

bool BucketTransport::mark_filled(size_t i) { return --buckets_[bucket_of_[i]].pending == 0; }

std::vector<std::vector<size_t>> BucketTransport::assignment() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.members);
  return out;
}

void BucketTransport::launch_ready() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) {
    Bucket& bucket = buckets_[next_to_launch_++];
    bucket.launched_at = Clock::now();
    bucket.done_seen = false;
    bucket.work = hook_(group_, bucket.buffer);
    stats_.buckets_launched++;
  }
}

void BucketTransport::poll_completions() {
  for (size_t b = 0; b < next_to_launch_; ++b) {
    Bucket& bucket = buckets_[b];
    if (bucket.work && !bucket.done_seen && bucket.work->is_completed()) {
      bucket.done_seen = true;
      bucket.done_at = Clock::now();
      // Sharded: free the full buffer now, not at wait_all (a failed collective's garbage
      // shard is never used: wait_all throws its error).
      if (sharded_) keep_shard_only(bucket);
    }
  }
}

bool BucketTransport::wait_on_stream() {
  std::vector<StreamWork*> works;
  for (size_t b = 0; b < next_to_launch_; ++b) {
    auto* work = dynamic_cast<StreamWork*>(buckets_[b].work.get());
    if (!work) return false;
    works.push_back(work);
  }
  for (StreamWork* work : works) work->wait_queued();
  if (works.empty() || !works.back()->done()) return true;
  const Device device = buckets_[next_to_launch_ - 1].device;
  works.back()->done()->wait(gpu::current_stream(device));
  return true;
}

void BucketTransport::mark_backward_end() {
  backward_end_.reset();
  if (buckets_.empty() || buckets_.front().device.is_cpu()) return;
  const Device device = buckets_.front().device;
  backward_end_ = std::make_shared<gpu::Event>(device, /*timing=*/true);
  backward_end_->record(gpu::current_stream(device));
}

std::optional<BucketTransport::DeviceTiming> BucketTransport::device_timing() const {
  if (!backward_end_ || next_to_launch_ == 0) return std::nullopt;
  DeviceTiming timing{{}, backward_end_};
  for (size_t b = 0; b < next_to_launch_; ++b) {
    auto* work = dynamic_cast<StreamWork*>(buckets_[b].work.get());
    if (!work || !work->started() || !work->done()) return std::nullopt;
    timing.buckets.emplace_back(work->started(), work->done());
  }
  return timing;
}

// The device-event figures replace the host clock's once every event is complete: each
// bucket's collective from its started to its done event (they run one after another on
// the communication stream), and the part of it before backward's end is hidden.
const BucketStats& BucketTransport::stats() const {
  if (!timing_ || !timing_->backward_end->query()) return stats_;
  for (const auto& [started, done] : timing_->buckets)
    if (!done->query()) return stats_;
  double comm = 0, hidden = 0;
  for (const auto& [started, done] : timing_->buckets) {
    const double total = std::max(0.0, double(started->elapsed_ms(*done)) / 1e3);
    const double before_end = double(started->elapsed_ms(*timing_->backward_end)) / 1e3;
    comm += total;
    hidden += std::clamp(before_end, 0.0, total);
  }
  stats_.comm_seconds = comm;
  stats_.hidden_seconds = hidden;
  stats_.clock = "device events";
  timing_.reset();
  return stats_;
}

void BucketTransport::wait_all(Clock::time_point started, Clock::time_point ended) {
  stats_.comm_seconds = 0;
  stats_.hidden_seconds = 0;
  stats_.buffers_lent = 0;
  stats_.clock = "host clock";
  auto previous_end = started;
  const bool on_stream = wait_on_stream();
  timing_ = on_stream ? device_timing() : std::nullopt;
  backward_end_.reset();
  for (size_t b = 0; b < next_to_launch_; ++b) {
    Bucket& bucket = buckets_[b];
    if (!on_stream) bucket.work->wait();
    stats_.buffers_lent += adopted(b);
    if (!bucket.done_seen) bucket.done_at = Clock::now();
    // A bucket's communication starts when it launched or when the previous one finished.
    auto done = bucket.done_at;
    auto start = std::max(bucket.launched_at, previous_end);
    if (done < start) done = start;
    previous_end = done;
    double total = std::chrono::duration<double>(done - start).count();
    double hidden = std::chrono::duration<double>(std::min(done, ended) - start).count();
    stats_.comm_seconds += total;
    stats_.hidden_seconds += std::max(0.0, hidden);
    if (trace_)
      trace_->span(group_.rank(), "comm", "allreduce bucket " + std::to_string(b), start, done,
                   "{\"params\": " + std::to_string(bucket.members.size()) + ", \"bytes\": " +
                       std::to_string(bucket.numel * itemsize(bucket.dtype)) + "}");
    bucket.work.reset();
    if (sharded_ && bucket.buffer.defined()) keep_shard_only(bucket);
  }
}

void BucketTransport::reset() {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    buckets_[b].pending = buckets_[b].members.size();
    buckets_[b].work.reset();
    release_adopted(b);
  }
  next_to_launch_ = 0;
}

}  // namespace rg::dist
