// The all-reduce's choice of algorithm. Up to Options::direct_bytes (direct_bytes_across_hosts
// where the ranks run on several hosts): the direct exchange (one message step;
// direct_exchange.cpp). Above it, where the ranks run on several hosts with several ranks
// each (the same number on every host), the two-level all-reduce (two_level_allreduce.cpp:
// fewer bytes cross the network). From Options::single_copy_bytes, between ranks of one host
// whose memory the ranks may reach: the single-copy path (single_copy_allreduce.cpp), which
// may decline on its first use (every rank then agrees to take the ring). Otherwise the ring
// (ring_allreduce.cpp). RG_DIST_ALLREDUCE=ring|two_level forces a choice
// (Options::allreduce_algorithm). The thresholds are the crossovers measured with
// bench/allreduce and bench/two_hosts.sh (docs/dist.md); every input to the choice (sizes,
// options, the host map from the rendezvous) is the same on every rank.
#include "dist/allreduce_choice.h"

#include <algorithm>

#include "dist/direct_exchange.h"
#include "dist/ring_allreduce.h"
#include "dist/single_copy_allreduce.h"
#include "dist/two_level_allreduce.h"

namespace rg::dist {

namespace {
bool takes_two_level(const CollectiveContext& ctx) {
  switch (ctx.options().allreduce_algorithm) {
    case AllreduceAlgorithm::automatic:
      return two_level_pays(ctx);
    case AllreduceAlgorithm::two_level:
      return two_level_fits(ctx);
    case AllreduceAlgorithm::ring:
      return false;
  }
  return false;
}

// The direct exchange's limit: lower across hosts, where each rank's buffer crosses the
// network once per peer on another host.
size_t direct_limit(const CollectiveContext& ctx) {
  const Options& options = ctx.options();
  return ctx.hosts().hosts > 1 ? std::min(options.direct_bytes, options.direct_bytes_across_hosts)
                               : options.direct_bytes;
}
}  // namespace

void allreduce_by_size(CollectiveContext& ctx, const Tensor& buf, CombineOp op,
                       const Envelope& env) {
  if (buf.nbytes() <= direct_limit(ctx) && ctx.size() > 1)
    return direct_allreduce(ctx, buf, op, env);
  if (takes_two_level(ctx))
    return in_accumulation_dtype(
        ctx, buf, op, [&](const Tensor& work) { two_level_in_place(ctx, work, op, env); });
  if (!single_copy_eligible(ctx, buf)) return ring_allreduce(ctx, buf, op, env);
  in_accumulation_dtype(ctx, buf, op, [&](const Tensor& work) {
    if (!single_copy_allreduce(ctx, work, op, env)) ring_in_place(ctx, work, op, env);  // declined
  });
}

}  // namespace rg::dist
