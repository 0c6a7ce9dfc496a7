// Recursive doubling: an all-reduce in log2(N) message steps, for buffers too large for the
// direct exchange (which sends the whole buffer to every peer) and too small for the ring
// (whose 2 (N-1) steps cost more in latency than its lower byte count saves).
//
// Let P be the largest power of two <= N. Ranks P .. N-1 ("extra") first send their buffer to
// rank r - P, which folds it into its own; the P ranks then run log2(P) steps: at step k
// (mask = 1, 2, 4, ...) rank r swaps its whole buffer with rank r ^ mask and both combine the
// two. Finally each rank r < N - P sends the result to its extra rank r + P. Each rank sends
// the whole buffer log2(P) times (plus once for the fold), against the ring's 2 (N-1)/N of it
// over 2 (N-1) steps. Ranks numbered host by host pair up within a host first: mask 1 joins
// ranks of one host when hosts run an even number of ranks each.
//
// Determinism: every combination takes the lower rank's operand first (lower (op) higher),
// so both partners of a step compute the same bits, and by induction every rank ends with the
// same bits: the sum of the balanced tree over the ranks in rank order (extras folded into
// their partners first), the same on every run. The order differs from the ring's, so the
// algorithms agree only to rounding.
#include "dist/recursive_doubling.h"

#include "dist/buffer_math.h"

namespace rg::dist {

namespace {

int largest_power_of_two_at_most(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// Sends `work` to `peer` and receives the peer's buffer into `incoming`, both complete.
void swap_with(CollectiveContext& ctx, const Tensor& work, const Tensor& incoming, int peer,
               const Envelope& env) {
  Transport& transport = ctx.transport();
  transport.begin_batch();
  auto sent = transport.send_message(work, peer, env);
  auto got = transport.recv_message(incoming, peer, env);
  transport.end_batch();
  transport.wait_message(*got, peer, env);
  transport.wait_message(*sent, peer, env);
}

// work = lower (op) higher, whichever of work and incoming is the lower rank's.
void combine_in_rank_order(const Tensor& work, const Tensor& incoming, bool work_is_lower,
                           CombineOp op) {
  if (work_is_lower) return reduce_into(work, incoming, op);
  reduce_into(incoming, work, op);
  copy_buffer(work, incoming);
}

void receive(CollectiveContext& ctx, const Tensor& into, int peer, const Envelope& env) {
  auto got = ctx.transport().recv_message(into, peer, env);
  ctx.transport().wait_message(*got, peer, env);
}

void send(CollectiveContext& ctx, const Tensor& from, int peer, const Envelope& env) {
  auto sent = ctx.transport().send_message(from, peer, env);
  ctx.transport().wait_message(*sent, peer, env);
}

}  // namespace

void recursive_doubling_in_place(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                                 const Envelope& env) {
  const int n = ctx.size(), r = ctx.rank();
  const int p = largest_power_of_two_at_most(n);
  if (r >= p) {  // an extra rank: its buffer goes to r - p, the result comes back
    send(ctx, work, r - p, env);
    return receive(ctx, work, r - p, env);
  }
  Tensor incoming = ctx.scratch(0, work.numel(), work.dtype(), work.device());
  if (r + p < n) {
    receive(ctx, incoming, r + p, env);
    reduce_into(work, incoming, op);  // r < r + p: this rank's operand first
  }
  for (int mask = 1; mask < p; mask *= 2) {
    const int partner = r ^ mask;
    swap_with(ctx, work, incoming, partner, env);
    combine_in_rank_order(work, incoming, r < partner, op);
  }
  if (r + p < n) send(ctx, work, r + p, env);
}

}  // namespace rg::dist
