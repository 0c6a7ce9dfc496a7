// The topology-aware all-reduce for ranks on several hosts (see two_level_allreduce.cpp).
#pragma once
#include "dist/collective_context.h"

namespace rg::dist {

// Whether the two-level all-reduce can run: every host runs the same number of ranks.
bool two_level_fits(const CollectiveContext& ctx);
// Whether it is the better choice: several hosts with several ranks each (with one rank per
// host, or one host, it is the flat ring with extra steps).
bool two_level_pays(const CollectiveContext& ctx);

// The all-reduce of `work`, already in the accumulation dtype (avg not yet divided); needs
// two_level_fits(ctx).
void two_level_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                        const Envelope& env);

}  // namespace rg::dist
