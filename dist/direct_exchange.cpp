// The direct exchange and the all-reduce built on it.
//
// Every rank sends its whole buffer to every peer and receives each peer's
// (Transport::exchange_with_all), then reduces the N inputs in rank order (input 0, then + input 1,
// + input 2,
// ...), so every rank does the same additions in the same order and ends with the same bits.
// One message step instead of the ring's 2 (N-1), for (N-1) times the buffer sent per rank
// instead of 2 (N-1)/N times it: the better trade up to Options::direct_bytes.
#include "dist/direct_exchange.h"

#include "dist/buffer_math.h"
#include "dist/ring_allreduce.h"

namespace rg::dist {

namespace {

// The exchange on `work` (already in the accumulation dtype): inputs land in scratch slot 0,
// input q at [q * count, (q + 1) * count).
void exchange_and_reduce(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                         const Envelope& env) {
  const int n = ctx.size(), r = ctx.rank();
  const int64_t count = work.numel();
  Tensor inputs = ctx.scratch(0, n * count, work.dtype(), work.device());
  auto input = [&](int q) { return flat_slice(inputs, q * count, count); };
  ctx.transport().exchange_with_all(work, inputs, env);
  copy_buffer(input(r), work);
  copy_buffer(work, input(0));
  for (int q = 1; q < n; ++q) reduce_into(work, input(q), op);
}

}  // namespace

void direct_allreduce(CollectiveContext& ctx, const Tensor& buf, CombineOp op,
                      const Envelope& env) {
  if (ctx.size() == 1) return ring_allreduce(ctx, buf, op, env);  // nothing to send
  in_accumulation_dtype(ctx, buf, op,
                        [&](const Tensor& work) { exchange_and_reduce(ctx, work, op, env); });
}

}  // namespace rg::dist
