// The direct exchange: every rank sends its whole buffer to every peer in one message step
// (see direct_exchange.cpp). For small all-reduces and barriers, and for the single-copy
// path's handshakes.
#pragma once
#include "dist/collective_context.h"

namespace rg::dist {

// All-reduce in one message step: the exchange, then each rank reduces all N inputs in rank
// order (bit-identical on every rank).
void direct_allreduce(CollectiveContext& ctx, const Tensor& buf, CombineOp op, const Envelope& env);

}  // namespace rg::dist
