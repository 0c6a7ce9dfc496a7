// Transport's defaults: the link names, the timed wait, and the optional messages refused.
#include "dist/transport.h"

#include <vector>

#include "dist/buffer_math.h"

namespace rg::dist {

Transport::Transport(int rank, int size, Milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout) {
  // The one check of a rank against its world, for every backend (ProcessGroup then checks
  // that its transport has its rank and size).
  RG_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroup: rank ", rank,
           " is outside a world of size ", size);
}

std::string Transport::link(int peer) const { return peer == rank_ ? "self" : "memory"; }

std::shared_ptr<Work> Transport::recv_combine_message(const Tensor& into, int, const Envelope&,
                                                      CombineOp) {
  RG_FAIL("recv_combine_message: the ", name(), " transport does not fold ",
          dtype_name(into.dtype()), " on receipt (ask capabilities().combines_on_receive first)");
}

void Transport::wait_message(Work& work, int peer, const Envelope& env) {
  if (!work.wait(timeout_))
    throw DistError({FailureKind::timeout, peer, describe(env), env.seq},
                    str("rank ", rank_, ": ", describe(env), ": timed out after ", timeout_.count(),
                        " ms waiting for rank ", peer));
}

// Peers in the order r+1, r+2, ...: no rank is everybody's first.
void Transport::exchange_with_all(const Tensor& mine, const Tensor& inputs, const Envelope& env) {
  const int n = size_, r = rank_;
  const int64_t count = mine.numel();
  std::vector<std::shared_ptr<Work>> recvs(n), sends(n);
  begin_batch();
  for (int step = 1; step < n; ++step) {
    const int to = (r + step) % n, from = (r + n - step) % n;
    recvs[from] = recv_message(flat_slice(inputs, from * count, count), from, env);
    sends[to] = send_message(mine, to, env);
  }
  end_batch();
  for (int q = 0; q < n; ++q)
    if (q != r) wait_message(*recvs[q], q, env);
  for (int q = 0; q < n; ++q)
    if (q != r) wait_message(*sends[q], q, env);
}

bool Transport::send_exchange(const Tensor&, const Envelope&) {
  RG_FAIL("send_exchange: the ", name(), " transport does not exchange eagerly");
}

void Transport::receive_exchange(const Tensor&, size_t, const Envelope&) {
  RG_FAIL("receive_exchange: the ", name(), " transport does not exchange eagerly");
}

}  // namespace rg::dist
