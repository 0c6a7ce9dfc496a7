// Which algorithm an all-reduce takes, by size and by what the transport can do (see
// allreduce_choice.cpp). Every rank makes the same choice for the same collective.
#pragma once
#include "dist/collective_context.h"

namespace rg::dist {

// The direct exchange up to options().direct_bytes, the single-copy path from
// options().single_copy_bytes where the ranks share a host (single_copy_allreduce.h), the
// ring otherwise.
void allreduce_by_size(CollectiveContext& ctx, const Tensor& buf, CombineOp op,
                       const Envelope& env);

}  // namespace rg::dist
