// Broadcast along the ring, pipelined in chunks (see broadcast.cpp).
#pragma once
#include "dist/collective_context.h"

namespace rg::dist {

void chain_broadcast(CollectiveContext& ctx, const Tensor& buf, int root, const Envelope& env);

}  // namespace rg::dist
