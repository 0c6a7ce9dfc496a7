// Broadcast along the ring, pipelined in chunks (see broadcast.cpp).
#pragma once
#include "dist/process_group.h"

namespace rg::dist {

void chain_broadcast(ProcessGroup& pg, const Tensor& buf, int root, const Envelope& env);

}  // namespace rg::dist
