// The all-reduce's choice of algorithm. Up to Options::direct_bytes (direct_bytes_across_hosts
// where the ranks run on several hosts): the direct exchange (one message step;
// direct_exchange.cpp). Where the ranks run on several hosts, above that and up to
// Options::recursive_doubling_bytes: recursive doubling (log2 N steps; recursive_doubling.cpp);
// above it, with several ranks on every host (the same number each), the two-level
// all-reduce (two_level_allreduce.cpp: fewer bytes cross the network). From
// Options::single_copy_bytes, between ranks of one host whose memory the ranks may reach: the
// single-copy path (single_copy_allreduce.cpp), which may decline on its first use (every
// rank then agrees to take the ring). Otherwise the ring (ring_allreduce.cpp).
// RG_DIST_ALLREDUCE=ring|two_level|recursive_doubling forces a choice above the direct
// exchange (Options::allreduce_algorithm). The thresholds are the crossovers measured with
// bench/allreduce and bench/two_hosts.sh (docs/dist.md); every input to the choice (sizes,
// options, the host map from the rendezvous) is the same on every rank.
#include "dist/allreduce_choice.h"

#include <algorithm>

#include "dist/direct_exchange.h"
#include "dist/recursive_doubling.h"
#include "dist/ring_allreduce.h"
#include "dist/single_copy_allreduce.h"
#include "dist/two_level_allreduce.h"

namespace rg::dist {

namespace {
enum class Above { ring, two_level, recursive_doubling };  // the choice above the direct limit

Above automatic_choice(const CollectiveContext& ctx, size_t nbytes) {
  if (ctx.hosts().hosts > 1 && nbytes <= ctx.options().recursive_doubling_bytes)
    return Above::recursive_doubling;
  return two_level_pays(ctx) ? Above::two_level : Above::ring;
}

Above choice_above_direct(const CollectiveContext& ctx, size_t nbytes) {
  switch (ctx.options().allreduce_algorithm) {
    case AllreduceAlgorithm::automatic:
      return automatic_choice(ctx, nbytes);
    case AllreduceAlgorithm::two_level:
      return two_level_fits(ctx) ? Above::two_level : Above::ring;
    case AllreduceAlgorithm::recursive_doubling:
      return Above::recursive_doubling;
    case AllreduceAlgorithm::ring:
      return Above::ring;
  }
  return Above::ring;
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
  const Above above = ctx.size() > 1 ? choice_above_direct(ctx, buf.nbytes()) : Above::ring;
  if (above == Above::recursive_doubling)
    return in_accumulation_dtype(
        ctx, buf, op, [&](const Tensor& work) { recursive_doubling_in_place(ctx, work, op, env); });
  if (above == Above::two_level)
    return in_accumulation_dtype(
        ctx, buf, op, [&](const Tensor& work) { two_level_in_place(ctx, work, op, env); });
  if (!single_copy_eligible(ctx, buf)) return ring_allreduce(ctx, buf, op, env);
  in_accumulation_dtype(ctx, buf, op, [&](const Tensor& work) {
    if (!single_copy_allreduce(ctx, work, op, env)) ring_in_place(ctx, work, op, env);  // declined
  });
}

}  // namespace rg::dist
