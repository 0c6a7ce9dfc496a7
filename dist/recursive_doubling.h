// The recursive-doubling all-reduce for small messages across hosts (see
// recursive_doubling.cpp).
#pragma once
#include "dist/collective_context.h"

namespace rg::dist {

// The all-reduce of `work`, already in the accumulation dtype (avg not yet divided).
void recursive_doubling_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                                 const Envelope& env);

}  // namespace rg::dist
