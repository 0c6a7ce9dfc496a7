// The ring collectives, written once over a Transport's messages (see ring_allreduce.cpp).
// Each runs on the calling thread (the one running the group's collectives) and returns when
// done.
#pragma once
#include <functional>
#include <vector>

#include "dist/collective_context.h"

namespace rg::dist {

void ring_allreduce(CollectiveContext& ctx, const Tensor& buf, CombineOp op, const Envelope& env);
void ring_reduce_scatter(CollectiveContext& ctx, const Tensor& out, const Tensor& in, CombineOp op,
                         const Envelope& env);
void ring_allgather(CollectiveContext& ctx, const Tensor& out, const Tensor& in,
                    const Envelope& env);
// The ring all-reduce of `work`, already in the accumulation dtype (avg not yet divided).
void ring_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op, const Envelope& env);

// A ring over some of the ranks: `ranks` in ring order (each sends to the next), this rank at
// `position`. Every member must run the same ring with the same segments.
struct RingMembers {
  std::vector<int> ranks;
  int position = 0;
};
RingMembers world_ring(const CollectiveContext& ctx);  // 0, 1, .., N-1
// ring_in_place over `ring`, its segments cut as evenly as possible.
void ring_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op, const Envelope& env,
                   const RingMembers& ring);
// The two halves over `ring`, in place, with segments[k] .. segments[k + 1] the elements of
// segment k (ring.ranks.size() segments): after the reduce-scatter the member at position k
// holds the complete segment k; the all-gather copies each member's segment k to all.
void ring_reduce_scatter_in_place(CollectiveContext& ctx, const Tensor& work,
                                  const std::vector<int64_t>& segments, CombineOp op,
                                  const Envelope& env, const RingMembers& ring);
void ring_allgather_in_place(CollectiveContext& ctx, const Tensor& work,
                             const std::vector<int64_t>& segments, const Envelope& env,
                             const RingMembers& ring);

// Number of pipeline chunks for segments of at most `max_segment_bytes`.
int64_t ring_chunks(int64_t max_segment_bytes, size_t chunk_bytes);

// The dtype the arithmetic of every host algorithm is done in (bf16: f32).
DType accumulation_dtype(DType dtype);
// Runs `reduce` on buf, or on an f32 copy of a bf16 buf (in scratch slot 1; copied back,
// rounded once), then divides by N for avg.
void in_accumulation_dtype(CollectiveContext& ctx, const Tensor& buf, CombineOp op,
                           const std::function<void(const Tensor&)>& reduce);

}  // namespace rg::dist
