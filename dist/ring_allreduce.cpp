// Ring all-reduce (and its two halves, reduce-scatter and all-gather), written once over the
// point-to-point messages of a Transport and shared by every backend.
//
// The N ranks form a ring: each sends only to its right neighbour (rank + 1) and receives
// only from its left (rank - 1). The buffer is cut into N segments (the first count % N one
// element longer). In step s = 0 .. N-2 (reduce-scatter) rank r sends segment r - s and
// receives segment r - s - 1, which it adds into its own copy; after N-1 steps rank r holds
// the complete sum of segment r + 1. In steps N-1 .. 2N-3 (all-gather) the completed segments
// travel once more around the ring and overwrite the stale copies. Every rank sends and
// receives 2 (N-1)/N of the buffer, whatever N: the bandwidth-optimal schedule.
//
// The ring may also be a subset of the ranks (RingMembers: the two-level all-reduce runs rings
// within a host and across hosts, dist/two_level_allreduce.cpp); N is then the ring's length.
//
// Pipelining: every segment is cut into C chunks (C equal for all segments, so chunk c of a
// step maps onto chunk c of the next one). Message (s, c) is posted as soon as chunk c of step
// s-1 is reduced, so the transport sends chunk c while this rank reduces chunk c+1 and the
// neighbours work on theirs. The receive of (s, c) is posted in the same batch as its send
// (NCCL needs the pair grouped to avoid deadlock; the host transports just start both).
//
// Transports that can (capabilities().combines_on_receive: the host ones) fold each
// reduce-scatter message into the buffer as its bytes arrive (recv_combine_message: out of the
// shared-memory ring, with no copy into scratch first); the others receive into two
// segment-sized scratch halves and reduce after.
//
// Determinism: segment k is always summed in ring order starting at rank k, then copied
// bit for bit to everybody, so all ranks end with identical bits and reruns repeat them.
// bf16 is reduced in an f32 copy and rounded once at the end; avg divides the sum by N.
//
// Small buffers take the direct exchange instead, large ones between ranks of one host the
// single-copy path (allreduce_choice.cpp).
#include "dist/ring_allreduce.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "dist/buffer_math.h"
#include "dist/combine_bytes.h"

namespace rg::dist {

int64_t ring_chunks(int64_t max_segment_bytes, size_t chunk_bytes) {
  const auto bytes = static_cast<int64_t>(chunk_bytes);
  return std::max<int64_t>(1, (max_segment_bytes + bytes - 1) / bytes);
}

namespace {

class Ring {
 public:
  // `shift` rotates which segment a rank owns: the one it completes is r + 1 + shift.
  Ring(CollectiveContext& ctx, const Tensor& buf, std::vector<int64_t> segments, int shift,
       CombineOp op, const Envelope& env, const RingMembers& members)
      : ctx_(ctx), buf_(buf), seg_(std::move(segments)), shift_(shift), op_(op), env_(env) {
    n_ = static_cast<int>(members.ranks.size());
    r_ = members.position;
    left_ = members.ranks[(r_ + n_ - 1) % n_];
    right_ = members.ranks[(r_ + 1) % n_];
    for (int k = 0; k < n_; ++k) max_seg_ = std::max(max_seg_, seg_[k + 1] - seg_[k]);
    chunks_ = ring_chunks(max_seg_ * static_cast<int64_t>(itemsize(buf.dtype())),
                          ctx.options().chunk_bytes);
    fold_on_receipt_ = ctx.capabilities().combines_on_receive && combines_bytes(buf.dtype()) &&
                       buf.device().is_host_memory();
  }

  // Runs steps [first, last]; steps before N-1 reduce, the others copy.
  void run(int first, int last) {
    if (n_ == 1 || first > last) return;
    if (first < n_ - 1 && !fold_on_receipt_)
      temp_ = ctx_.scratch(0, 2 * max_seg_, buf_.dtype(), buf_.device());
    recvs_.assign(2, std::vector<std::shared_ptr<Work>>(chunks_));
    for (int64_t c = 0; c < chunks_; ++c) post(first, c);
    for (int s = first; s <= last; ++s) {
      for (int64_t c = 0; c < chunks_; ++c) {
        ctx_.transport().wait_message(*recvs_[s % 2][c], left_, env_);
        recvs_[s % 2][c].reset();
        if (s < n_ - 1 && !folds(s)) reduce_into(chunk(recv_segment(s), c), temp_chunk(s, c), op_);
        if (s < last) post(s + 1, c);
      }
    }
    for (auto& send : sends_) ctx_.transport().wait_message(*send, right_, env_);
  }

 private:
  // Whether step s's receives fold straight into buf (a reduce-scatter step on a backend that
  // combines on receipt); other reduce-scatter steps receive into scratch and reduce after.
  bool folds(int s) const { return s < n_ - 1 && fold_on_receipt_; }
  int segment(int k) const { return ((k + shift_) % n_ + n_) % n_; }
  int send_segment(int s) const { return segment(r_ - s); }
  int recv_segment(int s) const { return segment(r_ - s - 1); }

  // Chunk c of segment k as a view of buf (chunks split the segment as evenly as possible).
  std::pair<int64_t, int64_t> chunk_range(int k, int64_t c) const {
    const int64_t len = seg_[k + 1] - seg_[k], base = len / chunks_, extra = len % chunks_;
    return {c * base + std::min(c, extra), base + (c < extra ? 1 : 0)};
  }
  Tensor chunk(int k, int64_t c) const {
    auto [start, len] = chunk_range(k, c);
    return flat_slice(buf_, seg_[k] + start, len);
  }
  // Receive space of reduce-scatter steps: two segment-sized halves, alternating by step.
  Tensor temp_chunk(int s, int64_t c) const {
    auto [start, len] = chunk_range(recv_segment(s), c);
    return flat_slice(temp_, (s % 2) * max_seg_ + start, len);
  }

  void post(int s, int64_t c) {
    ctx_.transport().begin_batch();
    if (folds(s))
      recvs_[s % 2][c] =
          ctx_.transport().recv_combine_message(chunk(recv_segment(s), c), left_, env_, op_);
    else
      recvs_[s % 2][c] = ctx_.transport().recv_message(
          s < n_ - 1 ? temp_chunk(s, c) : chunk(recv_segment(s), c), left_, env_);
    sends_.push_back(ctx_.transport().send_message(chunk(send_segment(s), c), right_, env_));
    ctx_.transport().end_batch();
  }

  CollectiveContext& ctx_;
  Tensor buf_;
  std::vector<int64_t> seg_;
  int shift_;
  CombineOp op_;
  Envelope env_;
  int n_ = 1, r_ = 0, left_ = 0, right_ = 0;
  int64_t max_seg_ = 0, chunks_ = 1;
  bool fold_on_receipt_ = false;  // reduce-scatter receives fold into buf (no scratch copy)
  Tensor temp_;
  std::vector<std::vector<std::shared_ptr<Work>>> recvs_;
  std::vector<std::shared_ptr<Work>> sends_;
};

}  // namespace

DType accumulation_dtype(DType dtype) { return dtype == DType::bf16 ? DType::f32 : dtype; }

void in_accumulation_dtype(CollectiveContext& ctx, const Tensor& buf, CombineOp op,
                           const std::function<void(const Tensor&)>& reduce) {
  Tensor work = buf;
  if (accumulation_dtype(buf.dtype()) != buf.dtype()) {
    work = ctx.scratch(1, buf.numel(), accumulation_dtype(buf.dtype()), buf.device());
    copy_buffer(work, buf);
  }
  reduce(work);
  if (op == CombineOp::avg) divide_by(work, ctx.size());
  if (!work.is_same(buf)) copy_buffer(buf, work);
}

RingMembers world_ring(const CollectiveContext& ctx) {
  RingMembers ring{std::vector<int>(ctx.size()), ctx.rank()};
  for (int q = 0; q < ctx.size(); ++q) ring.ranks[q] = q;
  return ring;
}

void ring_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op, const Envelope& env,
                   const RingMembers& ring) {
  const int n = static_cast<int>(ring.ranks.size());
  Ring(ctx, work, uneven_segments(work.numel(), n), 0, op, env, ring).run(0, 2 * n - 3);
}

void ring_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op, const Envelope& env) {
  ring_in_place(ctx, work, op, env, world_ring(ctx));
}

void ring_allreduce(CollectiveContext& ctx, const Tensor& buf, CombineOp op, const Envelope& env) {
  in_accumulation_dtype(ctx, buf, op,
                        [&](const Tensor& work) { ring_in_place(ctx, work, op, env); });
}

void ring_reduce_scatter_in_place(CollectiveContext& ctx, const Tensor& work,
                                  const std::vector<int64_t>& segments, CombineOp op,
                                  const Envelope& env, const RingMembers& ring) {
  const int n = static_cast<int>(ring.ranks.size());
  Ring(ctx, work, segments, -1, op, env, ring).run(0, n - 2);
}

void ring_allgather_in_place(CollectiveContext& ctx, const Tensor& work,
                             const std::vector<int64_t>& segments, const Envelope& env,
                             const RingMembers& ring) {
  const int n = static_cast<int>(ring.ranks.size());
  Ring(ctx, work, segments, -1, CombineOp::sum, env, ring).run(n - 1, 2 * n - 3);
}

namespace {
std::vector<int64_t> equal_segments(int n, int64_t count) {
  std::vector<int64_t> segments(n + 1);
  for (int k = 0; k <= n; ++k) segments[k] = k * count;
  return segments;
}
}  // namespace

void ring_reduce_scatter(CollectiveContext& ctx, const Tensor& out, const Tensor& in, CombineOp op,
                         const Envelope& env) {
  const int n = ctx.size(), r = ctx.rank();
  const int64_t count = out.numel();
  // The ring reduces in place, so it works on a copy of `in`.
  Tensor work = ctx.scratch(1, in.numel(), accumulation_dtype(in.dtype()), in.device());
  copy_buffer(work, in);
  ring_reduce_scatter_in_place(ctx, work, equal_segments(n, count), op, env, world_ring(ctx));
  Tensor mine = flat_slice(work, r * count, count);
  if (op == CombineOp::avg) divide_by(mine, n);
  copy_buffer(out, mine);
}

void ring_allgather(CollectiveContext& ctx, const Tensor& out, const Tensor& in,
                    const Envelope& env) {
  const int r = ctx.rank();
  const int64_t count = in.numel();
  Tensor mine = flat_slice(out, r * count, count);
  if (mine.data_ptr() != in.data_ptr()) copy_buffer(mine, in);  // `in` may be out's slice r
  ring_allgather_in_place(ctx, out, equal_segments(ctx.size(), count), env, world_ring(ctx));
}

}  // namespace rg::dist
