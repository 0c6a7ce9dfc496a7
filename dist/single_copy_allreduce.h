// The single-copy all-reduce of large buffers between ranks of one host (processes whose
// messages go through shared-memory rings, or threads of one process): each rank reaches its
// peers' buffers in their memory (loads and stores into a peer's mapped shareable arena, or
// Linux cross-memory attach, process_vm_readv) instead of having every byte copied into a
// ring and out again (see the .cpp).
#pragma once
#include "dist/collective_context.h"

namespace rg::dist {

// Whether an all-reduce of `buf` may take the single-copy path: a backend whose peers all
// share this host, f32/f64/bf16 in host memory, at least options().single_copy_bytes, and the
// ranks have not already refused it. The same answer on every rank for the same collective.
bool single_copy_eligible(const CollectiveContext& ctx, const Tensor& buf);

// All-reduce of `work` (f32 or f64, host memory) in place. The first time, the ranks check
// that each can read every peer's memory and agree on the answer; returns false (nothing
// reduced, on every rank) when they cannot, or when `work` is below
// options().single_copy_read_bytes and some rank's buffer cannot be loaded directly: the
// caller runs the ring instead.
bool single_copy_allreduce(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                           const Envelope& env);

// For a transport whose peers share this host, when it is made: large host blocks allocated
// from then on come from this process's shareable arena, which the peers may map (loads
// instead of process_vm_readv). Nothing where `options` turn the single-copy path or peer
// reads off.
void offer_arena_to_peers(const Options& options);

}  // namespace rg::dist
