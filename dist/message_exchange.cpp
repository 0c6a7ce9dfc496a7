// The direct exchange's fast path in the message pump: while a peer's stream carries nothing
// else, each frame of the exchange moves straight between the shared-memory ring and the
// caller's buffer on the calling thread (no posted op, no allocation, a bounded spin), and
// whatever cannot goes through posted ops (see message_pump.h).
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "dist/buffer_math.h"
#include "dist/message_pump.h"

namespace rg::dist::messages {

bool MessagePump::send_exchange(const Tensor& mine, const Envelope& env) {
  const int n = static_cast<int>(peers_.size());
  const WireHeader h = header_of(env, mine.nbytes());
  exchange_sends_.assign(n, nullptr);
  // Fetch each write position's line for writing before the lock: its trip from the peer's
  // spinning core then overlaps the lock instead of stalling the unlock after the stores.
  for (auto& p : peers_)
    if (p.link.data) p.link.data->prepare_write();  // sockets: nothing
  bool whole = true;
  std::lock_guard lock(mu_);
  throw_if_failed();
  for (int step = 1; step < n; ++step) {  // peers in the order r+1, r+2, ...
    const int q = (rank_ + step) % n;
    if (send_whole(peers_[q], h, mine.data_ptr(), mine.nbytes())) continue;
    exchange_sends_[q] = post_locked(true, mine, q, env);
    whole = false;
  }
  return whole;
}

void MessagePump::receive_exchange(const Tensor& inputs, size_t nbytes, const Envelope& env,
                                   Milliseconds timeout) {
  const int n = static_cast<int>(peers_.size());
  const auto count = static_cast<int64_t>(nbytes / itemsize(inputs.dtype()));  // per peer
  const WireHeader h = header_of(env, nbytes);
  exchange_recvs_.assign(n, nullptr);
  exchange_got_.assign(n, 0);
  receive_fast(h, static_cast<char*>(inputs.data_ptr()));
  for (int step = 1; step < n; ++step) {
    const int q = (rank_ + n - step) % n;
    if (!exchange_got_[q])
      exchange_recvs_[q] = post(false, flat_slice(inputs, q * count, count), q, env);
  }
  for (int q = 0; q < n; ++q) {
    if (exchange_recvs_[q]) wait_or_fail(*exchange_recvs_[q], timeout);
    if (exchange_sends_[q]) wait_or_fail(*exchange_sends_[q], timeout);
  }
  exchange_sends_.assign(n, nullptr);  // drop the ops' tensors now
  exchange_recvs_.assign(n, nullptr);
}

bool MessagePump::send_whole(Peer& p, const WireHeader& h, const void* payload, size_t nbytes) {
  if (socket_data_ || p.gone || !p.sends.empty()) return false;
  try {
    const bool sent = p.link.data->write_whole(&h, sizeof(h), payload, nbytes, true);
    bells_owed_ = bells_owed_ || sent;
    return sent;
  } catch (const PeerClosed&) {
    p.gone = true;
    return false;
  }
}

void MessagePump::receive_fast(const WireHeader& h, char* inputs) {
  constexpr auto kFastSpin = std::chrono::microseconds(20);
  const int n = static_cast<int>(peers_.size());
  int left = n - 1;
  std::vector<uint8_t>& got = exchange_got_;
  got[rank_] = 1;
  Clock::time_point until{};
  for (int round = 0; left > 0; ++round) {
    // The lock is taken when a frame's worth of bytes is there (reading positions needs
    // none), and now and then: another thread may have taken the frame out meanwhile.
    bool look = round % 32 == 31;
    for (int q = 0; q < n && !look; ++q)
      look = !got[q] && peers_[q].link.data->readable() >= sizeof(WireHeader) + h.nbytes;
    if (look) {
      std::lock_guard lock(mu_);
      for (int q = 0; q < n; ++q) {
        if (got[q]) continue;
        const int status = read_whole(peers_[q], h, inputs + q * h.nbytes);
        if (status == 0) continue;
        got[q] = status > 0 ? 1 : 2;
        --left;
      }
    }
    if (left == 0 || round % 32 != 31) continue;
    ring_owed_bells();
    if (yield_at_once_) sched_yield();  // the peers may be waiting for this core
    const auto now = Clock::now();
    if (until == Clock::time_point{}) until = now + kFastSpin;
    if (now >= until) break;
  }
  ring_owed_bells();
  for (auto& g : got) g = g == 1;  // 2 (left to a posted receive) is not got
}

void MessagePump::ring_owed_bells() {
  if (!bells_owed_) return;
  bells_owed_ = false;
  for (auto& p : peers_)
    if (p.link.data) p.link.data->ring_bell();
}

int MessagePump::read_whole(Peer& p, const WireHeader& h, char* payload) {
  if (socket_data_ || p.gone || p.in_op || p.in_unexpected || p.in_header_got || !p.recvs.empty())
    return -1;
  for (const auto& u : p.unexpected)
    if (u->header.tag == h.tag) return -1;
  ByteStream& data = *p.link.data;
  const size_t ready = data.readable();
  if (ready < sizeof(WireHeader)) return 0;
  const size_t frame = sizeof(WireHeader) + h.nbytes;
  if (frame <= kPeekedFrameBytes && ready >= frame) {  // header and payload in one look
    char bytes[kPeekedFrameBytes];
    data.peek(bytes, frame);
    if (std::memcmp(bytes, &h, sizeof(h)) != 0) return -1;  // the general path says why
    if (h.nbytes) std::memcpy(payload, bytes + sizeof(WireHeader), h.nbytes);
    data.skip(frame, true);  // the doorbell waits for the end of receive_fast
    bells_owed_ = true;
    return 1;
  }
  WireHeader theirs;
  data.peek(&theirs, sizeof(theirs));
  if (std::memcmp(&theirs, &h, sizeof(h)) != 0) return -1;  // the general path says why
  if (ready < frame) return 0;
  data.skip(sizeof(WireHeader));      // already seen
  data.read_some(payload, h.nbytes);  // all there: ready >= frame
  return 1;
}

}  // namespace rg::dist::messages
