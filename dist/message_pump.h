// The message pump: point-to-point messages over byte streams, the layer under the threads
// and tcp transports (dist/message_transport.cpp). Its code is in message_pump.cpp (posting,
// waiting, progress), message_streams.cpp (moving frames, control, failures) and
// message_exchange.cpp (the direct exchange's fast path).
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
// yields (at once where the ranks outnumber the cores: dist/idle_wait.h), then sleeps on the
// doorbell or on poll(), so many ranks can share few cores.
//
// Failures: a timeout, a peer whose process is gone while something is pending with it, or a
// mismatched envelope fails the group. The first failure is final; it is written to every
// peer's control stream, and passed on once by each rank that receives it, so that each one
// reports the original cause (and the rank at fault) rather than its own secondary timeout or
// the departure of a rank that left because of it.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dist/combine_bytes.h"
#include "dist/dist_error.h"
#include "dist/message_transport.h"

namespace rg::dist::messages {

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

inline WireHeader header_of(const Envelope& env, size_t nbytes) {
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

inline Envelope envelope_of(const WireHeader& h) {
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

inline std::string seconds(Milliseconds ms) { return str(ms.count() / 1000.0, " s"); }

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
  bool gone = false;            // its process exited or it closed the group
  bool control_closed = false;  // the end of its control stream was read
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
  MessagePump(int rank, std::vector<PeerLink> links, Doorbell* doorbell);
  // Yield the core at once when idle, never spin (dist/idle_wait.h); set before any traffic.
  void set_yield_at_once(bool yield) { yield_at_once_ = yield; }

  OpPtr post(bool is_send, const Tensor& t, int peer, const Envelope& env,
             std::optional<CombineOp> combine = std::nullopt);

  OpPtr post_locked(bool is_send, const Tensor& t, int peer, const Envelope& env,
                    std::optional<CombineOp> combine = std::nullopt);

  // The direct exchange of small all-reduces, in two halves: send_exchange writes `mine` to
  // every peer, receive_exchange reads peer q's buffer into slice q of `inputs` and waits
  // for everything. While a peer's stream carries nothing else (no message op, nothing
  // parked), its frames move straight between the shared ring and the buffers on the calling
  // thread: no op, no allocation, a bounded spin. Whatever cannot (a socket, a ring without
  // room, another message in front, a peer still silent after the spin) goes through posted
  // ops and wait_or_fail, which also report every failure. True from send_exchange: every
  // frame went out whole (nothing is left for a progress loop to push).
  bool send_exchange(const Tensor& mine, const Envelope& env);

  void receive_exchange(const Tensor& inputs, size_t nbytes, const Envelope& env,
                        Milliseconds timeout);

  bool all_rings() const { return !socket_data_; }
  bool socket_to(int peer) const;

  bool is_done(const MessageOp& op);

  // Makes progress until `op` is done (true) or `deadline` passes (false); throws if the op
  // or the group failed.
  bool wait(const MessageOp& op, Clock::time_point deadline);

  // wait() bounded by `timeout`; past it the group fails naming the peer at fault. A peer that
  // is itself stuck waiting for another rank will fail soon and report that rank, so while
  // the peer answers probes saying it waits, this rank keeps waiting for its report.
  void wait_or_fail(const MessageOp& op, Milliseconds timeout);

  // Records the group's failure (the first one wins) and fails every pending op.
  void fail(const Failure& f, const std::string& reason, bool tell_peers);

  void close();

 private:
  bool progress();

  // Writes a whole frame straight into the peer's ring if nothing is queued before it.
  bool send_whole(Peer& p, const WireHeader& h, const void* payload, size_t nbytes);

  // Spins (about kFastSpin) reading each peer's frame of the exchange straight into `inputs`;
  // sets exchange_got_[q] for those read. A peer whose stream is busy or holds another frame
  // first is left to a posted receive.
  void receive_fast(const WireHeader& h, char* inputs);

  // The doorbells send_exchange left to ring: its frames are out, and a peer that went to
  // sleep before they landed is woken here, a microsecond after the spin starts. (Until the
  // exchange is waited for, such a peer sleeps out its 1 ms instead.)
  void ring_owed_bells();

  // Reads peer p's next frame into `payload` if it is the exchange's (header h) and whole in
  // the ring: 1; not there yet: 0; p's stream is busy or holds something else first: -1.
  int read_whole(Peer& p, const WireHeader& h, char* payload);

  // A peer has gone while something is pending with it. What it wrote before going is still
  // in the streams, and the data read above may have run before the peer's last bytes landed
  // (the end of its control stream was seen after): read both again. True if that moved
  // anything, i.e. the peer closed in order after sending what this rank needed.
  bool read_last_words(int peer, Peer& p);

  bool pump_sends(int peer, Peer& p);

  bool pump_recvs(int peer, Peer& p);

  // Reads failure reports of the peer; PeerClosed when its process is gone.
  bool pump_control(int peer, Peer& p);

  // The peer's control stream has ended. Over shared memory the peer is gone: what it wrote
  // is already in the ring. Over a socket it is gone only when its data stream ends too,
  // since its last data may still be on the wire behind the control stream's end (a slow
  // link sends the short control stream's close first).
  void control_ended(Peer& p);

  // Checks an arriving header against the posted receive; fails the group on a mismatch.
  bool matches(int peer, const WireHeader& h, MessageOp& op);

  void deliver(int peer, Unexpected& u, const OpPtr& op);

  void complete(MessageOp& op);

  // Throws the group's failure, if it has failed.
  void throw_if_failed() const;

  // `report` is the message peers are told (default: `reason`), with `f`'s fields.
  void fail_locked(const Failure& f, const std::string& message, bool tell_peers,
                   const std::string& report = "");

  // Best effort: the control stream is normally empty, so the frame fits at once.
  void send_control(Peer& p, FrameType type, const std::string& text);

  // Nothing moved for `idle_for`: spin briefly (a peer on another core answers within
  // microseconds), then yield the core, then sleep until a peer rings or a socket is readable.
  void idle(Clock::duration idle_for);

  int rank_;
  Doorbell* doorbell_;          // rung by peers when bytes move in a shared ring (may be null)
  bool socket_data_ = false;    // some peer's data goes through a socket: poll() it when idle
  bool yield_at_once_ = false;  // the ranks of this host outnumber its cores (idle_wait.h)
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
};

}  // namespace rg::dist::messages
