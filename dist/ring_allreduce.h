// The ring collectives, written once over ProcessGroup's messages (see ring_allreduce.cpp).
// Each runs on the calling thread (the group's communication thread) and returns when done.
#pragma once
#include "dist/process_group.h"

namespace rg::dist {

void ring_allreduce(ProcessGroup& pg, const Tensor& buf, CombineOp op, const Envelope& env);
// All-reduce in one message step: every rank sends its whole buffer to every peer, then each
// reduces all N inputs in rank order (bit-identical on every rank). For small buffers.
void direct_allreduce(ProcessGroup& pg, const Tensor& buf, CombineOp op, const Envelope& env);
// The direct exchange up to pg.options().direct_bytes, the single-copy path from
// options().single_copy_bytes where the ranks share a host (single_copy_allreduce.h), the
// ring otherwise (ProcessGroup's choice).
void allreduce_by_size(ProcessGroup& pg, const Tensor& buf, CombineOp op, const Envelope& env);
void ring_reduce_scatter(ProcessGroup& pg, const Tensor& out, const Tensor& in, CombineOp op,
                         const Envelope& env);
void ring_allgather(ProcessGroup& pg, const Tensor& out, const Tensor& in, const Envelope& env);

// Number of pipeline chunks for segments of at most `max_segment_bytes`.
int64_t ring_chunks(int64_t max_segment_bytes, size_t chunk_bytes);

}  // namespace rg::dist
