// Two-level all-reduce: the ring, arranged by host, so that most bytes stay inside a host.
//
// H hosts run L ranks each. The buffer of B bytes is cut into L shards (as the ring cuts
// segments: the first count % L one element longer).
//   1. Within each host, a ring reduce-scatter over its L ranks (shared memory): the rank at
//      local index i ends with shard i summed over its host.
//   2. Across hosts, the L ranks at local index i (one per host, in host order) all-reduce
//      shard i with a ring of H: the only step that crosses the network.
//   3. Within each host, a ring all-gather: every rank gets every completed shard.
// Bytes per rank on the network: 2 (H-1)/H * B/L, so 2 (H-1)/H * B per host and direction,
// the least any all-reduce can send between two hosts (each host needs the other's B partial
// sums). The flat ring over N = H L ranks numbered host by host crosses between two hosts on
// H of its N links, each carrying 2 (N-1)/N * B: for 2 hosts of 2 ranks, 1.5 B per
// direction against the two-level's B (2/3), tending to 1/2 as L grows.
//
// Determinism: shard i is summed within each host in local ring order (the ring's fixed
// order), then across hosts in the cross-host ring's fixed order, and the results are copied
// bit for bit, so every rank ends with identical bits and reruns repeat them. The order
// differs from the flat ring's, so the two agree only to rounding.
#include "dist/two_level_allreduce.h"

#include "dist/buffer_math.h"
#include "dist/ring_allreduce.h"

namespace rg::dist {

bool two_level_fits(const CollectiveContext& ctx) { return ctx.hosts().uniform; }

bool two_level_pays(const CollectiveContext& ctx) {
  return two_level_fits(ctx) && ctx.hosts().hosts > 1 && ctx.hosts().local.size() > 1;
}

void two_level_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                        const Envelope& env) {
  const HostLayout& hosts = ctx.hosts();
  const int local_ranks = static_cast<int>(hosts.local.size());
  const int shard = hosts.local_index;
  const RingMembers within{hosts.local, shard};
  const RingMembers across{hosts.counterparts, hosts.host};
  const std::vector<int64_t> shards = uneven_segments(work.numel(), local_ranks);
  if (local_ranks > 1) ring_reduce_scatter_in_place(ctx, work, shards, op, env, within);
  if (hosts.hosts > 1)
    ring_in_place(ctx, flat_slice(work, shards[shard], shards[shard + 1] - shards[shard]), op, env,
                  across);
  if (local_ranks > 1) ring_allgather_in_place(ctx, work, shards, env, within);
}

}  // namespace rg::dist
