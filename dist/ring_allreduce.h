// The ring collectives, written once over a Transport's messages (see ring_allreduce.cpp).
// Each runs on the calling thread (the one running the group's collectives) and returns when
// done.
#pragma once
#include <functional>

#include "dist/collective_context.h"

namespace rg::dist {

void ring_allreduce(CollectiveContext& ctx, const Tensor& buf, CombineOp op, const Envelope& env);
void ring_reduce_scatter(CollectiveContext& ctx, const Tensor& out, const Tensor& in, CombineOp op,
                         const Envelope& env);
void ring_allgather(CollectiveContext& ctx, const Tensor& out, const Tensor& in,
                    const Envelope& env);
// The ring all-reduce of `work`, already in the accumulation dtype (avg not yet divided).
void ring_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op, const Envelope& env);

// Number of pipeline chunks for segments of at most `max_segment_bytes`.
int64_t ring_chunks(int64_t max_segment_bytes, size_t chunk_bytes);

// The dtype the arithmetic of every host algorithm is done in (bf16: f32).
DType accumulation_dtype(DType dtype);
// Runs `reduce` on buf, or on an f32 copy of a bf16 buf (in scratch slot 1; copied back,
// rounded once), then divides by N for avg.
void in_accumulation_dtype(CollectiveContext& ctx, const Tensor& buf, CombineOp op,
                           const std::function<void(const Tensor&)>& reduce);

}  // namespace rg::dist
