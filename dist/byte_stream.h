// Byte streams between two ranks, the transports under the message engine:
//   - RingBuffer: a single-producer single-consumer ring of bytes in memory shared by the two
//     sides, either process heap (threads backend) or a POSIX shared-memory mapping (tcp
//     backend, ranks on one host);
//   - sockets: a connected, non-blocking TCP socket.
// Every operation is non-blocking and moves as many bytes as it can right now.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace rg::dist {

// Thrown by a stream whose other side has gone (closed, exited or crashed).
struct PeerClosed {};

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  virtual size_t write_some(const void* data, size_t n) = 0;
  virtual size_t read_some(void* data, size_t n) = 0;
  virtual int fd() const { return -1; }  // a descriptor poll() can wait on, or -1
  virtual void close() = 0;              // tells the other side this side is done
};

// Wakes a rank's idle progress loop when a peer moved bytes in a shared ring (threads backend).
class Doorbell {
 public:
  void ring();
  uint64_t seq() const { return seq_.load(); }
  // Returns when seq() != seen or after `max`.
  void wait(uint64_t seen, std::chrono::microseconds max);

 private:
  std::atomic<uint64_t> seq_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Layout of one ring at the start of its memory; the data bytes follow the header.
struct alignas(64) RingBuffer {
  std::atomic<uint64_t> write_pos{0};  // bytes written so far (owned by the writer)
  char pad0[56];
  std::atomic<uint64_t> read_pos{0};  // bytes read so far (owned by the reader)
  char pad1[56];
  std::atomic<uint32_t> writer_closed{0};
  std::atomic<uint32_t> reader_closed{0};
  uint64_t capacity = 0;

  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  static size_t footprint(size_t capacity) { return sizeof(RingBuffer) + capacity; }
  // Constructs a ring in `memory` (footprint(capacity) bytes).
  static RingBuffer* create(void* memory, size_t capacity);
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings in shared memory need it");

// A duplex stream over two rings: writes go to `out`, reads come from `in`. `keepalive` owns
// the memory; `peer_bell` (may be null) is rung whenever bytes move.
std::unique_ptr<ByteStream> make_ring_stream(RingBuffer* out, RingBuffer* in,
                                             std::shared_ptr<void> keepalive,
                                             std::shared_ptr<Doorbell> peer_bell);
// Takes ownership of a connected socket and makes it non-blocking.
std::unique_ptr<ByteStream> make_socket_stream(int fd);

}  // namespace rg::dist
