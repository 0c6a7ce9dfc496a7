// Pipelined chain broadcast: the root sends its buffer chunk by chunk to root + 1, which
// forwards each chunk to root + 2 as soon as it has arrived, and so on; the rank before the
// root only receives. All receives are posted first, so chunks land directly in place. Each
// link carries the buffer once, so for large buffers the time approaches one transfer,
// independent of the world size. Every rank ends with the root's exact bytes.
// The chain is closed by one empty message from the last rank to the root, so every rank
// receives once from the rank before it and compares that rank's envelope with its own: ranks
// that disagree on the root (each of two "roots" would only send) fail as mismatched
// collectives instead of returning with their own values. Device-stream transports (nccl)
// carry no envelopes, so they skip it.
#include "dist/broadcast.h"

#include <vector>

#include "dist/buffer_math.h"
#include "dist/ring_allreduce.h"

namespace rg::dist {

void chain_broadcast(CollectiveContext& ctx, const Tensor& buf, int root, const Envelope& env) {
  const int n = ctx.size(), r = ctx.rank();
  if (n == 1) return;
  const int position = (r - root + n) % n;  // 0 at the root
  const int prev = (r + n - 1) % n, next = (r + 1) % n;
  const int64_t count = buf.numel();
  const int64_t chunks =
      ring_chunks(count * static_cast<int64_t>(itemsize(buf.dtype())), ctx.options().chunk_bytes);
  auto chunk = [&](int64_t c) {
    const int64_t base = count / chunks, extra = count % chunks;
    return flat_slice(buf, c * base + std::min(c, extra), base + (c < extra ? 1 : 0));
  };
  std::vector<std::shared_ptr<Work>> recvs(chunks), sends;
  const bool closed = !ctx.transport().capabilities().device_streams;
  const Tensor closing = flat_slice(buf, 0, 0);
  std::shared_ptr<Work> closing_recv;
  if (closed && position == 0) closing_recv = ctx.transport().recv_message(closing, prev, env);
  if (closed && position == n - 1)
    sends.push_back(ctx.transport().send_message(closing, next, env));
  if (position > 0) {
    for (int64_t c = 0; c < chunks; ++c) {
      ctx.transport().begin_batch();
      recvs[c] = ctx.transport().recv_message(chunk(c), prev, env);
      ctx.transport().end_batch();
    }
  }
  for (int64_t c = 0; c < chunks; ++c) {
    if (position > 0) ctx.transport().wait_message(*recvs[c], prev, env);
    if (position < n - 1) {
      ctx.transport().begin_batch();
      sends.push_back(ctx.transport().send_message(chunk(c), next, env));
      ctx.transport().end_batch();
    }
  }
  for (auto& send : sends) ctx.transport().wait_message(*send, next, env);
  if (closing_recv) ctx.transport().wait_message(*closing_recv, prev, env);
}

}  // namespace rg::dist
