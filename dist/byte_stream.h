// Byte streams between two ranks, the transports under the message engine:
//   - RingBuffer: a single-producer single-consumer ring of bytes in memory shared by the two
//     sides, either process heap (threads backend) or a POSIX shared-memory mapping (tcp
//     backend, ranks on one host);
//   - sockets: a connected, non-blocking TCP socket.
// Every operation is non-blocking and moves as many bytes as it can right now.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace rg::dist {

// Thrown by a stream whose other side has gone (closed, exited or crashed).
struct PeerClosed {};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual size_t write_some(const void* data, size_t n) = 0;
  virtual size_t read_some(void* data, size_t n) = 0;
  // Reads up to n bytes and hands them, in order, to take(bytes, length), in place where the
  // stream can (a ring: straight out of its memory; a socket: through a 16 KiB buffer);
  // returns how many were read.
  virtual size_t read_with(size_t n, const std::function<void(const char*, size_t)>& take);
  // Stream in memory only (rings): writes both parts, in order, behind one published position
  // if they fit whole (true), else writes nothing (false, always for sockets). With
  // `ring_later` the caller rings the peer's doorbell itself, soon, with ring_bell(): the
  // fence in ringing waits for the stores just made, which can take a trip to the peer's core.
  virtual bool write_whole(const void* a, size_t na, const void* b, size_t nb,
                           bool ring_later = false) {
    (void)a, (void)na, (void)b, (void)nb, (void)ring_later;
    return false;
  }
  virtual void ring_bell() {}
  // A hint that a write follows soon (rings: fetch the line of the write position for writing
  // now, so that the trip to the peer's core that its spin forces overlaps the caller's work
  // before the write instead of stalling the next locked instruction after it).
  virtual void prepare_write() {}
  // Bytes that can be read now without waiting (0 for sockets: they do not say); a copy of
  // the first n <= readable() of them that leaves them in the stream; moving past n of them
  // unread (after a peek; with `ring_later` the caller rings the peer's doorbell itself, soon,
  // with ring_bell(), as for write_whole).
  virtual size_t readable() { return 0; }
  virtual void peek(void* data, size_t n) { (void)data, (void)n; }
  virtual void skip(size_t n, bool ring_later = false) { (void)n, (void)ring_later; }
  virtual int fd() const { return -1; }  // a descriptor poll() can wait on, or -1
  virtual void close() = 0;              // tells the other side this side is done
};

// Wakes a rank's idle progress loop when a peer moved bytes in a shared ring. It is plain
// memory (a futex word), so it works between threads and between processes sharing a mapping.
// A rank announces that it is about to sleep before it looks at its streams one last time;
// ringing costs a fence and a load of a line nobody writes while the rank is awake, so busy
// ranks exchange no doorbell traffic (it used to be an atomic add on the peer's line per
// read and per write: most of the cost of a small message).
struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleepers{0};

  // After bytes moved (their positions published): wakes the rank if it sleeps or is about to.
  void ring();
  // The rank's side: announce() returns the value to pass to sleep(); between the two the
  // rank looks at its streams once more (a peer that moved bytes before the announcement is
  // seen there, one after it rings) and calls sleep() only if nothing moved, else cancel().
  uint32_t announce();
  // Returns when rung, or after `max`; ends the announcement.
  void sleep(uint32_t seen, std::chrono::microseconds max);
  void cancel() { sleepers.fetch_sub(1); }
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "doorbells in shared memory need it");

// Rings are cache-line aligned: the compiler may use aligned vector stores on them, so their
// memory must come from an aligned allocation (a mapping, or operator new with align_val_t).
inline constexpr size_t kRingAlignment = 64;

// Layout of one ring at the start of its memory; the data bytes follow the header.
struct alignas(kRingAlignment) RingBuffer {
  std::atomic<uint64_t> write_pos{0};  // bytes written so far (owned by the writer)
  // A copy of the last small frame written whole (at most kPreviewWords words), stamped with
  // preview_tag = its length << 56 | its stream position (a seqlock: kNoPreview while being
  // rewritten). It shares the write position's cache line, so a reader that finds its next
  // bytes here takes them without pulling the data lines over from the writer's core: a
  // small message then moves one cache line between cores, not two (barrier 0.60 -> 0.50 us).
  static constexpr int kPreviewWords = 6;
  static constexpr uint64_t kNoPreview = ~uint64_t(0);
  std::atomic<uint64_t> preview_tag{kNoPreview};
  std::atomic<uint64_t> preview[kPreviewWords] = {};
  std::atomic<uint64_t> read_pos{0};  // bytes read so far (owned by the reader)
  char pad1[56];
  std::atomic<uint32_t> writer_closed{0};
  std::atomic<uint32_t> reader_closed{0};
  uint64_t capacity = 0;

  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  // Bytes one ring occupies; a multiple of kRingAlignment, so rings can be laid end to end.
  static size_t footprint(size_t capacity) {
    return sizeof(RingBuffer) + (capacity + kRingAlignment - 1) / kRingAlignment * kRingAlignment;
  }
  // Constructs a ring in `memory` (footprint(capacity) bytes, kRingAlignment-aligned; throws
  // rg::Error otherwise).
  static RingBuffer* create(void* memory, size_t capacity);
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings in shared memory need it");
static_assert(offsetof(RingBuffer, read_pos) == kRingAlignment,
              "write_pos and the preview fill a line");

// A duplex stream over two rings: writes go to `out`, reads come from `in`. `keepalive` owns
// the memory (rings and bell); `peer_bell` (may be null) is rung whenever bytes move.
std::unique_ptr<ByteStream> make_ring_stream(RingBuffer* out, RingBuffer* in, Doorbell* peer_bell,
                                             std::shared_ptr<void> keepalive);
// Takes ownership of a connected socket and makes it non-blocking.
std::unique_ptr<ByteStream> make_socket_stream(int fd);

}  // namespace rg::dist
