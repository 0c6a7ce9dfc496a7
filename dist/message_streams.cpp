// The message pump's frame movers: sends written in order, arriving headers matched to posted
// receives (or parked, or read as unexpected), the control stream's failure reports and
// probes, and the group's failure (see message_pump.h for the protocol).
#include <algorithm>
#include <cstring>

#include "core/storage.h"
#include "dist/buffer_math.h"
#include "dist/message_pump.h"

namespace rg::dist::messages {

bool MessagePump::read_last_words(int peer, Peer& p) {
  bool moved = false;
  try {
    moved |= pump_recvs(peer, p);
  } catch (const PeerClosed&) {
  }
  try {  // a failure report comes before its end
    moved |= pump_control(peer, p);
  } catch (const PeerClosed&) {
  }
  return moved;
}

bool MessagePump::pump_sends(int peer, Peer& p) {
  bool moved = false;
  while (!p.sends.empty()) {
    MessageOp& op = *p.sends.front();
    // A whole frame that fits goes out behind one published position (rings only).
    if (op.header_done == 0 &&
        p.link.data->write_whole(&op.header, sizeof(WireHeader), op.data, op.nbytes)) {
      op.header_done = sizeof(WireHeader);
      op.payload_done = op.nbytes;
    }
    if (op.header_done < sizeof(WireHeader)) {
      size_t k = p.link.data->write_some(reinterpret_cast<char*>(&op.header) + op.header_done,
                                         sizeof(WireHeader) - op.header_done);
      op.header_done += k;
      moved |= k > 0;
      if (op.header_done < sizeof(WireHeader)) break;
    }
    if (op.payload_done < op.nbytes) {
      size_t k = p.link.data->write_some(op.data + op.payload_done, op.nbytes - op.payload_done);
      op.payload_done += k;
      moved |= k > 0;
      if (op.payload_done < op.nbytes) break;
    }
    complete(op);
    p.sends.pop_front();
    moved = true;
  }
  (void)peer;
  return moved;
}

bool MessagePump::pump_recvs(int peer, Peer& p) {
  bool moved = false;
  for (;;) {
    if (!p.in_op && !p.in_unexpected) {
      if (p.in_header_got < sizeof(WireHeader)) {
        size_t k = p.link.data->read_some(reinterpret_cast<char*>(&p.in_header) + p.in_header_got,
                                          sizeof(WireHeader) - p.in_header_got);
        p.in_header_got += k;
        moved |= k > 0;
        if (p.in_header_got < sizeof(WireHeader)) return moved;
        if (p.in_header.magic != kMagic || p.in_header.type != kData) {
          fail_locked({FailureKind::mismatch, -1, "", 0},
                      str("rank ", rank_, ": corrupt message stream from rank ", peer), true);
          return moved;
        }
      }
      auto it = std::find_if(p.recvs.begin(), p.recvs.end(),
                             [&](const OpPtr& op) { return op->env.tag == p.in_header.tag; });
      if (it != p.recvs.end()) {
        OpPtr op = *it;
        p.recvs.erase(it);
        if (!matches(peer, p.in_header, *op)) return moved;
        p.in_op = op;
      } else if (!p.recvs.empty()) {
        p.in_unexpected = std::make_unique<Unexpected>();
        p.in_unexpected->header = p.in_header;
        p.in_unexpected->payload.resize(p.in_header.nbytes);
      } else {
        return moved;  // parked until a receive is posted
      }
    }
    if (p.in_op) {
      MessageOp& op = *p.in_op;
      const size_t want = op.nbytes - op.payload_done;
      size_t k = 0;
      if (want > 0 && op.combine)
        k = p.link.data->read_with(
            want, [&op](const char* bytes, size_t n) { op.combine->take(bytes, n); });
      else if (want > 0)
        k = p.link.data->read_some(op.data + op.payload_done, want);
      op.payload_done += k;
      moved |= k > 0;
      if (op.payload_done < op.nbytes) return moved;
      complete(op);
      p.in_op.reset();
    } else {
      Unexpected& u = *p.in_unexpected;
      size_t k = u.payload.size() > u.got
                     ? p.link.data->read_some(u.payload.data() + u.got, u.payload.size() - u.got)
                     : 0;
      u.got += k;
      moved |= k > 0;
      if (u.got < u.payload.size()) return moved;
      auto it = std::find_if(p.recvs.begin(), p.recvs.end(),
                             [&](const OpPtr& op) { return op->env.tag == u.header.tag; });
      if (it != p.recvs.end()) {
        OpPtr op = *it;
        p.recvs.erase(it);
        deliver(peer, u, op);
        p.in_unexpected.reset();
      } else {
        p.unexpected.push_back(std::move(p.in_unexpected));
      }
    }
    p.in_header_got = 0;
    moved = true;
  }
}

bool MessagePump::pump_control(int peer, Peer& p) {
  if (!p.link.control || p.control_closed) return false;
  char buf[4096];
  bool moved = false;
  bool closed = false;
  try {
    for (;;) {
      size_t k = p.link.control->read_some(buf, sizeof(buf));
      if (k == 0) break;
      moved = true;
      p.control_in.insert(p.control_in.end(), buf, buf + k);
    }
  } catch (const PeerClosed&) {
    closed = true;  // after reading what it said last
  }
  while (p.control_in.size() >= sizeof(WireHeader)) {
    WireHeader h;
    std::memcpy(&h, p.control_in.data(), sizeof(h));
    if (p.control_in.size() < sizeof(h) + h.nbytes) break;
    std::string text(p.control_in.data() + sizeof(h), h.nbytes);
    p.control_in.erase(p.control_in.begin(), p.control_in.begin() + sizeof(h) + h.nbytes);
    if (h.magic != kMagic) continue;
    // A report is passed on (once: only the first failure counts), so a rank that hears of
    // the failure late, or first sees the reporter go, still learns the original cause.
    if (h.type == kAbort) {
      auto [origin, said] = parse_abort(text, peer);
      fail_locked(origin, str("rank ", rank_, ": rank ", peer, " failed: ", said), true, said);
    }
    // A reply: empty when not waiting, else the rank waited for (4 bytes) and what for.
    if (h.type == kProbe) {
      const int32_t peer_waited = waiting_ ? waiting_->peer : -1;
      send_control(p, kProbeReply,
                   waiting_ ? std::string(reinterpret_cast<const char*>(&peer_waited), 4) +
                                  str("waiting for rank ", waiting_->peer,
                                      waiting_->is_send ? " to receive" : " to send", " in ",
                                      describe(waiting_->env))
                            : std::string());
    }
    if (h.type == kProbeReply) {
      p.probe = text.empty() ? Peer::Probe::idle : Peer::Probe::waiting;
      int32_t waits_for = -1;
      if (text.size() >= 4) std::memcpy(&waits_for, text.data(), 4);
      p.probe_waits_for = waits_for;
      p.probe_reply = text.size() >= 4 ? text.substr(4) : text;
    }
  }
  if (closed) control_ended(p);
  return moved;
}

void MessagePump::control_ended(Peer& p) {
  p.control_closed = true;
  const bool data_over_socket = p.link.data && p.link.data->fd() >= 0;
  if (!data_over_socket) p.gone = true;
}

bool MessagePump::matches(int peer, const WireHeader& h, MessageOp& op) {
  Envelope theirs = envelope_of(h);
  std::string problem;
  if (!(theirs == op.env)) {
    problem = op.env.kind == Collective::p2p && theirs.kind == Collective::p2p
                  ? str("rank ", peer, " sent ", theirs.count, " ", dtype_name(theirs.dtype),
                        " with tag ", theirs.tag, " but this rank posted a receive of ",
                        op.env.count, " ", dtype_name(op.env.dtype))
                  : str("mismatched collectives: rank ", peer, " is in ", describe(theirs),
                        " while this rank is in ", describe(op.env));
  } else if (h.nbytes != op.nbytes) {
    problem = str("rank ", peer, " sent a message of ", h.nbytes, " bytes for ", describe(op.env),
                  ", this rank expected ", op.nbytes, " bytes");
  }
  if (problem.empty()) return true;
  fail_locked({FailureKind::mismatch, -1, describe(op.env), op.env.seq},
              str("rank ", rank_, ": ", problem), true);
  return false;
}

void MessagePump::deliver(int peer, Unexpected& u, const OpPtr& op) {
  if (!matches(peer, u.header, *op)) return;
  if (op->combine)
    op->combine->take(u.payload.data(), op->nbytes);
  else if (op->nbytes)
    std::memcpy(op->data, u.payload.data(), op->nbytes);
  op->payload_done = op->nbytes;
  complete(*op);
}

void MessagePump::complete(MessageOp& op) {
  op.done = true;
  op.keep = Tensor();
}

void MessagePump::throw_if_failed() const {
  if (!failure_.empty()) throw DistError(failure_info_, failure_);
}

void MessagePump::fail_locked(const Failure& f, const std::string& message, bool tell_peers,
                              const std::string& report) {
  if (!failure_.empty()) return;
  const std::string reason = dist_message(message);
  failure_ = reason;
  failure_info_ = f;
  for (auto& p : peers_) {
    auto fail_op = [&](const OpPtr& op) {
      if (op && !op->done) {
        op->error = reason;
        complete(*op);
      }
    };
    for (auto& op : p.sends) fail_op(op);
    for (auto& op : p.recvs) fail_op(op);
    fail_op(p.in_op);
    p.sends.clear();
    p.recvs.clear();
    p.in_op.reset();
    if (tell_peers)
      send_control(p, kAbort, abort_payload(f, rank_, report.empty() ? reason : report));
  }
}

void MessagePump::send_control(Peer& p, FrameType type, const std::string& text) {
  if (!p.link.control || p.gone || p.control_closed) return;
  WireHeader h;
  h.type = type;
  h.nbytes = text.size();
  std::string frame(reinterpret_cast<const char*>(&h), sizeof(h));
  frame += text;
  try {
    size_t done = 0;
    for (int tries = 0; tries < 1000 && done < frame.size(); ++tries)
      done += p.link.control->write_some(frame.data() + done, frame.size() - done);
  } catch (const PeerClosed&) {
    control_ended(p);
  }
}

}  // namespace rg::dist::messages
