// The message pump's posting, waiting and progress loop (see message_pump.h for the protocol).
#include "dist/message_pump.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>

namespace rg::dist::messages {

MessagePump::MessagePump(int rank, std::vector<PeerLink> links, Doorbell* doorbell)

    : rank_(rank), doorbell_(doorbell) {
  peers_.resize(links.size());
  for (size_t p = 0; p < links.size(); ++p) {
    peers_[p].link = std::move(links[p]);
    if (peers_[p].link.data && peers_[p].link.data->fd() >= 0) socket_data_ = true;
  }
}

OpPtr MessagePump::post(bool is_send, const Tensor& t, int peer, const Envelope& env,
                        std::optional<CombineOp> combine) {
  std::lock_guard lock(mu_);
  return post_locked(is_send, t, peer, env, combine);
}

OpPtr MessagePump::post_locked(bool is_send, const Tensor& t, int peer, const Envelope& env,
                               std::optional<CombineOp> combine) {
  auto op = std::make_shared<MessageOp>();
  if (combine) op->combine = ByteCombiner{static_cast<char*>(t.data_ptr()), t.dtype(), *combine};
  op->is_send = is_send;
  op->peer = peer;
  op->env = env;
  op->data = static_cast<char*>(t.data_ptr());
  op->nbytes = t.nbytes();
  op->keep = t;
  op->header = header_of(env, op->nbytes);
  throw_if_failed();
  Peer& p = peers_[peer];
  if (is_send) {
    p.sends.push_back(op);
    try {
      pump_sends(peer, p);
    } catch (const PeerClosed&) {
      p.gone = true;
    }
    return op;
  }
  for (auto it = p.unexpected.begin(); it != p.unexpected.end(); ++it) {
    if ((*it)->header.tag != env.tag) continue;
    deliver(peer, **it, op);
    p.unexpected.erase(it);
    return op;
  }
  bool earlier_in_flight = p.in_unexpected && p.in_unexpected->header.tag == env.tag;
  if (!earlier_in_flight && p.header_parked() && p.in_header.tag == env.tag) {
    if (matches(peer, p.in_header, *op)) p.in_op = op;
    return op;
  }
  p.recvs.push_back(op);
  return op;
}

bool MessagePump::socket_to(int peer) const {
  const auto& data = peers_[static_cast<size_t>(peer)].link.data;
  return data && data->fd() >= 0;
}

bool MessagePump::is_done(const MessageOp& op) {
  std::lock_guard lock(mu_);
  return op.done;
}

bool MessagePump::wait(const MessageOp& op, Clock::time_point deadline) {
  Clock::time_point idle_since{};
  for (;;) {
    bool moved = false;
    {
      std::lock_guard lock(mu_);
      if (!op.done) moved = progress();
      if (op.done) {
        if (!op.error.empty()) throw DistError(failure_info_, op.error);
        return true;
      }
      throw_if_failed();
    }
    const auto now = Clock::now();
    if (moved || idle_since == Clock::time_point{}) idle_since = now;
    if (moved) continue;
    if (now >= deadline) return false;
    idle(now - idle_since);
  }
}

void MessagePump::wait_or_fail(const MessageOp& op, Milliseconds timeout) {
  struct Waiting {
    MessagePump& e;
    const MessageOp* previous;
    Waiting(MessagePump& pump, const MessageOp& op) : e(pump) {
      std::lock_guard lock(e.mu_);
      previous = e.waiting_;
      e.waiting_ = &op;
    }
    ~Waiting() {
      std::lock_guard lock(e.mu_);
      e.waiting_ = previous;
    }
  } waiting(*this, op);
  if (wait(op, Clock::now() + timeout)) return;
  const Milliseconds grace = std::min<Milliseconds>(timeout / 2, Milliseconds(2000));
  Peer::Probe answer = Peer::Probe::asked;
  for (int round = 0; round < 4 && answer == Peer::Probe::asked; ++round) {
    {
      std::lock_guard lock(mu_);
      peers_[op.peer].probe = Peer::Probe::asked;
      send_control(peers_[op.peer], kProbe, "");
    }
    if (wait(op, Clock::now() + grace)) return;
    std::lock_guard lock(mu_);
    answer = peers_[op.peer].probe;
    if (answer == Peer::Probe::waiting)
      answer = Peer::Probe::asked;  // still waiting: again
    else if (answer == Peer::Probe::asked)
      break;  // no answer
  }
  std::string why;
  {
    std::lock_guard lock(mu_);
    const Peer& p = peers_[op.peer];
    why = p.probe == Peer::Probe::asked ? str("; rank ", op.peer,
                                              " does not answer (exited, "
                                              "stopped, hung, or not calling into the process "
                                              "group)")
          : p.probe == Peer::Probe::idle
              ? str("; rank ", op.peer, " is alive but not in this operation")
              : str("; rank ", op.peer, " is ", p.probe_reply);
    // Blamed: the peer, or the rank it waits for in turn.
    const bool chain = p.probe == Peer::Probe::waiting && p.probe_waits_for >= 0;
    fail_locked(
        {FailureKind::timeout, chain ? p.probe_waits_for : op.peer, describe(op.env), op.env.seq},
        str("rank ", rank_, ": ", describe(op.env), ": timed out after ", seconds(timeout),
            " waiting for rank ", op.peer, op.is_send ? " to receive" : " to send", why),
        true);
  }
  wait(op, Clock::now());  // throws the failure
}

void MessagePump::fail(const Failure& f, const std::string& reason, bool tell_peers) {
  std::lock_guard lock(mu_);
  fail_locked(f, reason, tell_peers);
}

void MessagePump::close() {
  std::lock_guard lock(mu_);
  for (auto& p : peers_) {
    if (p.link.data) p.link.data->close();
    if (p.link.control) p.link.control->close();
  }
}

bool MessagePump::progress() {
  bool moved = false;
  const bool check_control = (++rounds_ % 16) == 0 || idled_;
  idled_ = false;
  for (int peer = 0; peer < static_cast<int>(peers_.size()) && failure_.empty(); ++peer) {
    Peer& p = peers_[peer];
    if (!p.link.data) continue;
    bool moved_here = false;
    try {
      moved_here |= pump_sends(peer, p);
      moved_here |= pump_recvs(peer, p);
      if (check_control || p.gone) moved_here |= pump_control(peer, p);
    } catch (const PeerClosed&) {
      p.gone = true;
    }
    if (p.gone && !moved_here && p.busy() && failure_.empty())
      moved_here = read_last_words(peer, p);
    if (p.gone && !moved_here && p.busy() && failure_.empty()) {
      const MessageOp& op = p.in_op           ? *p.in_op
                            : p.sends.empty() ? *p.recvs.front()
                                              : *p.sends.front();
      fail_locked({FailureKind::peer_gone, peer, describe(op.env), op.env.seq},
                  str("rank ", rank_, ": ", describe(op.env), ": rank ", peer,
                      " has gone (its process exited or crashed, or it destroyed its group)"),
                  true);
    }
    moved |= moved_here;
  }
  return moved;
}

void MessagePump::idle(Clock::duration idle_for) {
  using std::chrono::microseconds;
  if (idle_for < microseconds(20) && !yield_at_once_) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    return;
  }
  if (idle_for < microseconds(200)) {
    sched_yield();
    return;
  }
  if (doorbell_ && !socket_data_) {
    const uint32_t seen = doorbell_->announce();
    bool moved = false;
    {
      std::lock_guard lock(mu_);
      idled_ = true;
      moved = progress();  // what moved before the announcement (later moves ring)
    }
    if (moved)
      doorbell_->cancel();
    else
      doorbell_->sleep(seen, microseconds(1000));
    return;
  }
  std::vector<pollfd> fds;
  {
    std::lock_guard lock(mu_);
    idled_ = true;
    for (auto& p : peers_) {
      ByteStream* control = p.control_closed ? nullptr : p.link.control.get();
      for (ByteStream* s : {p.link.data.get(), control}) {
        if (s && s->fd() >= 0) fds.push_back({s->fd(), POLLIN, 0});
      }
    }
  }
  ::poll(fds.data(), fds.size(), 1);
}

}  // namespace rg::dist::messages
