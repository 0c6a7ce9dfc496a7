// Messages over byte streams: the point-to-point layer of the threads and tcp backends.
//
// Wire format: every message is a 40-byte WireHeader (the sender's Envelope and the payload
// size) followed by the payload. Each peer has a FIFO of posted sends, written in order, and
// a list of posted receives; an arriving header is matched to the first posted receive with
// its tag. The payload is then read straight into the receiving tensor. A header nobody has
// posted a receive for is left in the stream ("parked") until one is, so the common case
// copies each byte once per transport; only when a later message on the same stream is
// wanted is the parked one read into a heap buffer ("unexpected").
//
// Progress is made by whoever waits (the communication thread during collectives, a user
// thread in Work::wait); one mutex guards the whole state. An idle waiter spins briefly, then
// yields, then sleeps on the doorbell or on poll(), so many ranks can share few cores.
//
// Failures: a timeout, a peer whose process is gone while something is pending with it, or a
// mismatched envelope fails the group. The first failure is final; it is written to every
// peer's control stream, and passed on once by each rank that receives it, so that each one
// reports the original cause (and the rank at fault) rather than its own secondary timeout or
// the departure of a rank that left because of it.
#include "dist/message_group.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>

#include "core/storage.h"
#include "dist/buffer_math.h"
#include "dist/combine_bytes.h"
#include "dist/dist_error.h"

namespace rg::dist {
namespace {

constexpr uint32_t kMagic = 0x52474d31;  // "RGM1"
// kData frames carry messages; the others travel on the control stream: kAbort reports a
// failure, kProbe asks a silent peer what it is doing, kProbeReply answers (empty: not waiting).
enum FrameType : uint8_t { kData = 1, kAbort = 2, kProbe = 3, kProbeReply = 4 };

struct WireHeader {
  uint32_t magic = kMagic;
  uint8_t type = kData;
  uint8_t kind = 0, op = 0, dtype = 0;
  int32_t tag = 0;
  int32_t root = -1;
  uint64_t seq = 0;
  int64_t count = 0;
  uint64_t nbytes = 0;
};
static_assert(sizeof(WireHeader) == 40, "the header is sent as raw bytes");

WireHeader header_of(const Envelope& env, size_t nbytes) {
  WireHeader h;
  h.kind = static_cast<uint8_t>(env.kind);
  h.op = static_cast<uint8_t>(env.op);
  h.dtype = static_cast<uint8_t>(env.dtype);
  h.tag = env.tag;
  h.root = env.root;
  h.seq = env.seq;
  h.count = env.count;
  h.nbytes = nbytes;
  return h;
}

Envelope envelope_of(const WireHeader& h) {
  return Envelope{static_cast<Collective>(h.kind),
                  static_cast<CombineOp>(h.op),
                  static_cast<DType>(h.dtype),
                  h.tag,
                  h.root,
                  h.seq,
                  h.count};
}

// Frames up to this size are read by the direct exchange in one peek (from the ring's
// preview when it shows them).
constexpr size_t kPeekedFrameBytes = 256;

std::string seconds(Milliseconds ms) { return str(ms.count() / 1000.0, " s"); }

struct MessageOp {
  bool is_send = false;
  int peer = 0;
  Envelope env;
  char* data = nullptr;
  size_t nbytes = 0;
  Tensor keep;  // keeps the memory alive while the op is pending
  WireHeader header;
  size_t header_done = 0, payload_done = 0;
  std::optional<ByteCombiner> combine;  // a receive that folds the payload into data
  bool done = false;
  std::string error;
};
using OpPtr = std::shared_ptr<MessageOp>;

struct Unexpected {
  WireHeader header;
  std::vector<char> payload;
  size_t got = 0;
};

struct Peer {
  PeerLink link;
  std::deque<OpPtr> sends;  // in posting order; the front is being written
  std::deque<OpPtr> recvs;  // posted, not matched yet
  WireHeader in_header;     // the frame being read
  size_t in_header_got = 0;
  OpPtr in_op;                                         // the matched receive being filled
  std::unique_ptr<Unexpected> in_unexpected;           // or the heap buffer being filled
  std::deque<std::unique_ptr<Unexpected>> unexpected;  // complete, unmatched
  std::vector<char> control_in;
  bool gone = false;
  enum class Probe { none, asked, waiting, idle } probe = Probe::none;
  std::string probe_reply;
  int probe_waits_for = -1;  // the rank its probe reply says it waits for

  bool header_parked() const {
    return in_header_got == sizeof(WireHeader) && !in_op && !in_unexpected;
  }
  bool busy() const { return !sends.empty() || !recvs.empty() || in_op; }
};

// The per-group state of the message layer and the progress loop that matches and moves
// frames (named apart from the autograd engine: it pumps messages, whoever waits drives it).
class MessagePump {
 public:
  MessagePump(int rank, std::vector<PeerLink> links, Doorbell* doorbell)
      : rank_(rank), doorbell_(doorbell) {
    peers_.resize(links.size());
    for (size_t p = 0; p < links.size(); ++p) {
      peers_[p].link = std::move(links[p]);
      if (peers_[p].link.data && peers_[p].link.data->fd() >= 0) socket_data_ = true;
    }
  }

  OpPtr post(bool is_send, const Tensor& t, int peer, const Envelope& env,
             std::optional<CombineOp> combine = std::nullopt) {
    std::lock_guard lock(mu_);
    return post_locked(is_send, t, peer, env, combine);
  }

  OpPtr post_locked(bool is_send, const Tensor& t, int peer, const Envelope& env,
                    std::optional<CombineOp> combine = std::nullopt) {
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

  // The direct exchange of small all-reduces, in two halves: send_exchange writes `mine` to
  // every peer, receive_exchange reads peer q's buffer into slice q of `inputs` and waits
  // for everything. While a peer's stream carries nothing else (no message op, nothing
  // parked), its frames move straight between the shared ring and the buffers on the calling
  // thread: no op, no allocation, a bounded spin. Whatever cannot (a socket, a ring without
  // room, another message in front, a peer still silent after the spin) goes through posted
  // ops and wait_or_fail, which also report every failure. True from send_exchange: every
  // frame went out whole (nothing is left for a progress loop to push).
  bool send_exchange(const Tensor& mine, const Envelope& env) {
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

  void receive_exchange(const Tensor& inputs, size_t nbytes, const Envelope& env,
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

  bool all_rings() const { return !socket_data_; }
  bool socket_to(int peer) const {
    const auto& data = peers_[static_cast<size_t>(peer)].link.data;
    return data && data->fd() >= 0;
  }

  bool is_done(const MessageOp& op) {
    std::lock_guard lock(mu_);
    return op.done;
  }

  // Makes progress until `op` is done (true) or `deadline` passes (false); throws if the op
  // or the group failed.
  bool wait(const MessageOp& op, Clock::time_point deadline) {
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

  // wait() bounded by `timeout`; past it the group fails naming the peer at fault. A peer that
  // is itself stuck waiting for another rank will fail soon and report that rank, so while
  // the peer answers probes saying it waits, this rank keeps waiting for its report.
  void wait_or_fail(const MessageOp& op, Milliseconds timeout) {
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

  // Records the group's failure (the first one wins) and fails every pending op.
  void fail(const Failure& f, const std::string& reason, bool tell_peers) {
    std::lock_guard lock(mu_);
    fail_locked(f, reason, tell_peers);
  }

  void close() {
    std::lock_guard lock(mu_);
    for (auto& p : peers_) {
      if (p.link.data) p.link.data->close();
      if (p.link.control) p.link.control->close();
    }
  }

 private:
  bool progress() {
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

  // Writes a whole frame straight into the peer's ring if nothing is queued before it.
  bool send_whole(Peer& p, const WireHeader& h, const void* payload, size_t nbytes) {
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

  // Spins (about kFastSpin) reading each peer's frame of the exchange straight into `inputs`;
  // sets exchange_got_[q] for those read. A peer whose stream is busy or holds another frame
  // first is left to a posted receive.
  void receive_fast(const WireHeader& h, char* inputs) {
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
      const auto now = Clock::now();
      if (until == Clock::time_point{}) until = now + kFastSpin;
      if (now >= until) break;
    }
    ring_owed_bells();
    for (auto& g : got) g = g == 1;  // 2 (left to a posted receive) is not got
  }

  // The doorbells send_exchange left to ring: its frames are out, and a peer that went to
  // sleep before they landed is woken here, a microsecond after the spin starts. (Until the
  // exchange is waited for, such a peer sleeps out its 1 ms instead.)
  void ring_owed_bells() {
    if (!bells_owed_) return;
    bells_owed_ = false;
    for (auto& p : peers_)
      if (p.link.data) p.link.data->ring_bell();
  }

  // Reads peer p's next frame into `payload` if it is the exchange's (header h) and whole in
  // the ring: 1; not there yet: 0; p's stream is busy or holds something else first: -1.
  int read_whole(Peer& p, const WireHeader& h, char* payload) {
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

  // A peer has gone while something is pending with it. What it wrote before going is still
  // in the streams, and the data read above may have run before the peer's last bytes landed
  // (the end of its control stream was seen after): read both again. True if that moved
  // anything, i.e. the peer closed in order after sending what this rank needed.
  bool read_last_words(int peer, Peer& p) {
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

  bool pump_sends(int peer, Peer& p) {
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

  bool pump_recvs(int peer, Peer& p) {
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

  // Reads failure reports of the peer; PeerClosed when its process is gone.
  bool pump_control(int peer, Peer& p) {
    if (!p.link.control) return false;
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
    if (closed) throw PeerClosed{};
    return moved;
  }

  // Checks an arriving header against the posted receive; fails the group on a mismatch.
  bool matches(int peer, const WireHeader& h, MessageOp& op) {
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

  void deliver(int peer, Unexpected& u, const OpPtr& op) {
    if (!matches(peer, u.header, *op)) return;
    if (op->combine)
      op->combine->take(u.payload.data(), op->nbytes);
    else if (op->nbytes)
      std::memcpy(op->data, u.payload.data(), op->nbytes);
    op->payload_done = op->nbytes;
    complete(*op);
  }

  void complete(MessageOp& op) {
    op.done = true;
    op.keep = Tensor();
  }

  // Throws the group's failure, if it has failed.
  void throw_if_failed() const {
    if (!failure_.empty()) throw DistError(failure_info_, failure_);
  }

  // `report` is the message peers are told (default: `reason`), with `f`'s fields.
  void fail_locked(const Failure& f, const std::string& message, bool tell_peers,
                   const std::string& report = "") {
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

  // Best effort: the control stream is normally empty, so the frame fits at once.
  void send_control(Peer& p, FrameType type, const std::string& text) {
    if (!p.link.control || p.gone) return;
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
      p.gone = true;
    }
  }

  // Nothing moved for `idle_for`: spin briefly (a peer on another core answers within
  // microseconds), then yield the core, then sleep until a peer rings or a socket is readable.
  void idle(Clock::duration idle_for) {
    using std::chrono::microseconds;
    if (idle_for < microseconds(20)) {
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
        for (ByteStream* s : {p.link.data.get(), p.link.control.get()}) {
          if (s && s->fd() >= 0) fds.push_back({s->fd(), POLLIN, 0});
        }
      }
    }
    ::poll(fds.data(), fds.size(), 1);
  }

  int rank_;
  Doorbell* doorbell_;        // rung by peers when bytes move in a shared ring (may be null)
  bool socket_data_ = false;  // some peer's data goes through a socket: poll() it when idle
  std::mutex mu_;
  std::vector<Peer> peers_;
  std::string failure_;
  Failure failure_info_;  // failure_'s fields
  uint64_t rounds_ = 0;
  bool idled_ = false;                  // look at the control streams in the next round
  const MessageOp* waiting_ = nullptr;  // what wait_or_fail waits for (answers probes)
  // The direct exchange's per-peer state (send_exchange, receive_exchange), kept to reuse
  // its memory.
  std::vector<OpPtr> exchange_sends_, exchange_recvs_;
  std::vector<uint8_t> exchange_got_;
  // Set by send_exchange and cleared by receive_exchange, which follow each other (mu_ of
  // the ProcessGroup orders them when they run on different threads).
  bool bells_owed_ = false;

  friend class MessageGroup;
};

class MessageWork : public Work {
 public:
  MessageWork(std::shared_ptr<MessagePump> pump, OpPtr op, Milliseconds group_timeout)
      : pump_(std::move(pump)), op_(std::move(op)), group_timeout_(group_timeout) {}
  bool wait(Milliseconds timeout) override { return pump_->wait(*op_, Clock::now() + timeout); }
  void wait() override { pump_->wait_or_fail(*op_, group_timeout_); }
  bool is_completed() override { return pump_->is_done(*op_); }
  const MessageOp& op() const { return *op_; }

 private:
  std::shared_ptr<MessagePump> pump_;
  OpPtr op_;
  Milliseconds group_timeout_;
};

class MessageGroup : public ProcessGroup {
 public:
  MessageGroup(const char* backend, int rank, int size, Options options,
               std::vector<PeerLink> links, Doorbell* doorbell, std::shared_ptr<void> keepalive)
      : ProcessGroup(rank, size, options),
        backend_(backend),
        pump_(std::make_shared<MessagePump>(rank, std::move(links), doorbell)),
        keepalive_(std::move(keepalive)) {}

  ~MessageGroup() override {
    shutdown();
    pump_->close();
  }

  const char* backend_name() const override { return backend_; }
  bool supports_device(Device device) const override { return device.is_host_memory(); }

  std::shared_ptr<Work> send_message(const Tensor& t, int dst, const Envelope& env) override {
    return std::make_shared<MessageWork>(pump_, pump_->post(true, t, dst, env), options().timeout);
  }
  std::shared_ptr<Work> recv_message(const Tensor& t, int src, const Envelope& env) override {
    return std::make_shared<MessageWork>(pump_, pump_->post(false, t, src, env), options().timeout);
  }
  bool combines_on_receive(const Tensor& into) const override {
    return combines_bytes(into.dtype()) && into.device().is_host_memory();
  }
  std::shared_ptr<Work> recv_combine_message(const Tensor& into, int src, const Envelope& env,
                                             CombineOp op) override {
    RG_CHECK(combines_on_receive(into), "recv_combine_message: ", dtype_name(into.dtype()), " on ",
             into.device().str(), " is not folded on receipt");
    return std::make_shared<MessageWork>(pump_, pump_->post(false, into, src, env, op),
                                         options().timeout);
  }

  bool exchanges_eagerly() const override { return pump_->all_rings(); }
  bool peers_share_host() const override { return pump_->all_rings(); }
  std::string peer_link(int peer) const override {
    if (peer == rank() || peer < 0 || peer >= size()) return ProcessGroup::peer_link(peer);
    if (pump_->socket_to(peer)) return "tcp";
    return std::string(backend_) == "threads" ? "memory" : "shm";
  }
  bool send_exchange(const Tensor& mine, const Envelope& env) override {
    return pump_->send_exchange(mine, env);
  }
  void receive_exchange(const Tensor& inputs, size_t message_bytes, const Envelope& env) override {
    pump_->receive_exchange(inputs, message_bytes, env, options().timeout);
  }
  void exchange_with_all(const Tensor& mine, const Tensor& inputs, const Envelope& env) override {
    send_exchange(mine, env);
    receive_exchange(inputs, mine.nbytes(), env);
  }

  void abort(const std::string& reason) override {
    const Failure f{FailureKind::aborted, rank(), "", 0};
    pump_->fail(f, str("rank ", rank(), " aborted: ", reason), true);
    const DistError error(f, str("rank ", rank(), " aborted: ", reason));
    set_failure(error.what(), std::make_exception_ptr(error));
  }

  void wait_message(Work& work, int, const Envelope&) override {
    pump_->wait_or_fail(static_cast<MessageWork&>(work).op(), options().timeout);
  }

 private:
  const char* backend_;
  std::shared_ptr<MessagePump> pump_;
  std::shared_ptr<void> keepalive_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_message_group(const char* backend, int rank, int size,
                                                 Options options, std::vector<PeerLink> links,
                                                 Doorbell* doorbell,
                                                 std::shared_ptr<void> keepalive) {
  RG_CHECK(static_cast<int>(links.size()) == size, backend, ": ", links.size(),
           " peer links for a world of size ", size);
  return std::make_shared<MessageGroup>(backend, rank, size, options, std::move(links), doorbell,
                                        std::move(keepalive));
}

}  // namespace rg::dist
