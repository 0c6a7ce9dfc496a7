// Ring-buffer and socket byte streams (see byte_stream.h).
//
// Ring protocol: the writer owns write_pos, the reader owns read_pos; both only grow.
// write_pos - read_pos bytes are readable, capacity minus that is writable. Publishing a
// position with release and loading the other with acquire orders the data copies, so the
// ring works between threads and between processes sharing the mapping.
#include "dist/byte_stream.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <new>

#include "core/error.h"

namespace rg::dist {

// Shared (not FUTEX_PRIVATE) futex operations: the word may be mapped by several processes.
// ring() and announce() are the two halves of Dekker's handshake: each side publishes its own
// store (the ring position, the sleeper count) before a full fence, then reads the other's,
// so at least one of them sees the other.
void Doorbell::ring() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_relaxed) == 0) return;
  seq.fetch_add(1);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

uint32_t Doorbell::announce() {
  sleepers.fetch_add(1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return seq.load();
}

void Doorbell::sleep(uint32_t seen, std::chrono::microseconds max) {
  if (seq.load() == seen) {
    timespec timeout{static_cast<time_t>(max.count() / 1000000),
                     static_cast<long>(max.count() % 1000000) * 1000};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq), FUTEX_WAIT, seen, &timeout, nullptr, 0);
  }
  sleepers.fetch_sub(1);
}

size_t ByteStream::read_with(size_t n, const std::function<void(const char*, size_t)>& take) {
  char buffer[16384];
  const size_t k = read_some(buffer, std::min(n, sizeof(buffer)));
  if (k > 0) take(buffer, k);
  return k;
}

RingBuffer* RingBuffer::create(void* memory, size_t capacity) {
  RG_CHECK(reinterpret_cast<uintptr_t>(memory) % kRingAlignment == 0,
           "RingBuffer::create: memory at ", memory, " is not ", kRingAlignment,
           "-byte aligned (rings need an aligned allocation)");
  RG_CHECK(capacity > 0, "RingBuffer::create: a ring needs a capacity of at least one byte");
  auto* ring = new (memory) RingBuffer();
  ring->capacity = capacity;
  return ring;
}

namespace {

class RingStream : public ByteStream {
 public:
  RingStream(RingBuffer* out, RingBuffer* in, Doorbell* bell, std::shared_ptr<void> keepalive)
      : out_(out),
        in_(in),
        bell_(bell),
        keepalive_(std::move(keepalive)),
        written_(out->write_pos.load(std::memory_order_relaxed)),
        consumed_(in->read_pos.load(std::memory_order_relaxed)) {}
  ~RingStream() override { close(); }

  size_t write_some(const void* data, size_t n) override {
    if (out_->reader_closed.load(std::memory_order_acquire)) throw PeerClosed{};
    const uint64_t w = written_;
    const size_t k = std::min<uint64_t>(n, room(w, n));
    if (k == 0) return 0;
    copy_in(w, data, k);
    publish_written(w + k);
    if (bell_) bell_->ring();
    return k;
  }

  bool write_whole(const void* a, size_t na, const void* b, size_t nb, bool ring_later) override {
    if (out_->reader_closed.load(std::memory_order_acquire)) throw PeerClosed{};
    const uint64_t w = written_;
    const size_t n = na + nb;
    if (room(w, n) < n) return false;
    copy_in(w, a, na);
    copy_in(w + na, b, nb);
    if (n <= sizeof(out_->preview)) write_preview(w, a, na, b, nb);
    publish_written(w + n);
    if (!ring_later) ring_bell();
    return true;
  }

  static constexpr uint64_t kPositionBits = (uint64_t(1) << 56) - 1;

  // The seqlock's writer: invalidate, copy the words, then stamp them with what they show.
  void write_preview(uint64_t w, const void* a, size_t na, const void* b, size_t nb) {
    uint64_t words[RingBuffer::kPreviewWords] = {};
    std::memcpy(words, a, na);
    if (nb) std::memcpy(reinterpret_cast<char*>(words) + na, b, nb);
    out_->preview_tag.store(RingBuffer::kNoPreview, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 0; i < RingBuffer::kPreviewWords; ++i)
      out_->preview[i].store(words[i], std::memory_order_relaxed);
    out_->preview_tag.store((na + nb) << 56 | (w & kPositionBits), std::memory_order_release);
  }

  // The seqlock's reader: the first n bytes at read position r, if the preview holds them
  // (a frame starting at r at least n bytes long).
  bool read_preview(uint64_t r, void* data, size_t n) {
    const uint64_t tag = in_->preview_tag.load(std::memory_order_acquire);
    if (tag == RingBuffer::kNoPreview || (tag & kPositionBits) != (r & kPositionBits) ||
        n > (tag >> 56))
      return false;
    uint64_t words[RingBuffer::kPreviewWords];
    for (int i = 0; i < RingBuffer::kPreviewWords; ++i)
      words[i] = in_->preview[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (in_->preview_tag.load(std::memory_order_relaxed) != tag) return false;
    std::memcpy(data, words, n);
    return true;
  }

  void prepare_write() override { __builtin_prefetch(&out_->write_pos, 1, 3); }

  void ring_bell() override {
    if (bell_) bell_->ring();
  }

  size_t readable() override { return in_->write_pos.load(std::memory_order_acquire) - consumed_; }

  void skip(size_t n, bool ring_later) override {
    publish_consumed(consumed_ + n);
    if (!ring_later) ring_bell();
  }

  void peek(void* data, size_t n) override {
    const uint64_t r = consumed_, cap = in_->capacity;
    if (read_preview(r, data, n)) return;
    const size_t at = r % cap, first = std::min<size_t>(n, cap - at);
    std::memcpy(data, in_->bytes() + at, first);
    std::memcpy(static_cast<char*>(data) + first, in_->bytes(), n - first);
  }

  size_t read_some(void* data, size_t n) override {
    char* to = static_cast<char*>(data);
    return read_into(n, [&to](const char* from, size_t k) {
      std::memcpy(to, from, k);
      to += k;
    });
  }

  size_t read_with(size_t n, const std::function<void(const char*, size_t)>& take) override {
    return read_into(n, take);
  }

  // Hands up to n readable bytes to take(bytes, length), in one or two pieces (the wrap),
  // then frees them for the writer; a template, so read_some calls no std::function.
  template <typename Take>
  size_t read_into(size_t n, Take&& take) {
    const uint64_t r = consumed_;
    const uint64_t w = readable_end(r, n);
    const uint64_t cap = in_->capacity;
    const size_t k = std::min<uint64_t>(n, w - r);
    if (k == 0) return 0;
    const size_t at = r % cap, first = std::min<size_t>(k, cap - at);
    take(in_->bytes() + at, first);
    if (k > first) take(in_->bytes(), k - first);
    publish_consumed(r + k);
    if (bell_) bell_->ring();
    return k;
  }

  // Free bytes in out_ at write position w. The reader's position is loaded only when the
  // one seen last leaves less than `wanted`: loading it pulls the reader's cache line over.
  uint64_t room(uint64_t w, size_t wanted) {
    const uint64_t cap = out_->capacity;
    if (cap - (w - read_pos_seen_) < wanted)
      read_pos_seen_ = out_->read_pos.load(std::memory_order_acquire);
    return cap - (w - read_pos_seen_);
  }

  // Copies n bytes to ring position w of out_ (not yet published).
  void copy_in(uint64_t w, const void* data, size_t n) {
    if (n == 0) return;  // data may be null
    const uint64_t cap = out_->capacity;
    const size_t at = w % cap, first = std::min<size_t>(n, cap - at);
    std::memcpy(out_->bytes() + at, data, first);
    std::memcpy(out_->bytes(), static_cast<const char*>(data) + first, n - first);
  }

  void close() override {
    if (closed_) return;
    closed_ = true;
    out_->writer_closed.store(1, std::memory_order_release);
    in_->reader_closed.store(1, std::memory_order_release);
    if (bell_) bell_->ring();
  }

 private:
  // Each side keeps its own position in a private copy and only stores to the shared one:
  // loading the shared write position before each write missed in the cache (the reader's
  // spin had pulled its line over) and cost a trip between cores per small message.
  void publish_written(uint64_t w) {
    written_ = w;
    out_->write_pos.store(w, std::memory_order_release);
  }
  void publish_consumed(uint64_t r) {
    consumed_ = r;
    in_->read_pos.store(r, std::memory_order_release);  // the writer may reuse the bytes now
  }

  // The write position up to which bytes from read position r can be read (r: none yet).
  // Throws PeerClosed when the writer closed after its last byte and n bytes are wanted.
  uint64_t readable_end(uint64_t r, size_t n) {
    uint64_t w = in_->write_pos.load(std::memory_order_acquire);
    if (w != r || !in_->writer_closed.load(std::memory_order_acquire)) return w;
    w = in_->write_pos.load(std::memory_order_acquire);  // bytes written before the close
    if (w == r && n > 0) throw PeerClosed{};
    return w;
  }

  RingBuffer* out_;
  RingBuffer* in_;
  Doorbell* bell_;
  std::shared_ptr<void> keepalive_;
  uint64_t written_;            // out_->write_pos, as this side (its only writer) set it
  uint64_t consumed_;           // in_->read_pos, as this side (its only writer) set it
  uint64_t read_pos_seen_ = 0;  // out_->read_pos when last loaded (it only grows)
  bool closed_ = false;
};

class SocketStream : public ByteStream {
 public:
  explicit SocketStream(int fd) : fd_(fd) {
    int flags = fcntl(fd_, F_GETFL, 0);
    fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  }
  ~SocketStream() override { close(); }

  size_t write_some(const void* data, size_t n) override {
    if (n == 0) return 0;
    for (;;) {
      ssize_t k = ::send(fd_, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k >= 0) return static_cast<size_t>(k);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      throw PeerClosed{};  // EPIPE, ECONNRESET, ...: the other side is gone
    }
  }

  size_t read_some(void* data, size_t n) override {
    if (n == 0) return 0;
    for (;;) {
      ssize_t k = ::recv(fd_, data, n, MSG_DONTWAIT);
      if (k > 0) return static_cast<size_t>(k);
      if (k == 0) throw PeerClosed{};
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      throw PeerClosed{};
    }
  }

  int fd() const override { return fd_; }

  void close() override {
    if (fd_ < 0) return;
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace

std::unique_ptr<ByteStream> make_ring_stream(RingBuffer* out, RingBuffer* in, Doorbell* peer_bell,
                                             std::shared_ptr<void> keepalive) {
  return std::make_unique<RingStream>(out, in, peer_bell, std::move(keepalive));
}

std::unique_ptr<ByteStream> make_socket_stream(int fd) {
  return std::make_unique<SocketStream>(fd);
}

}  // namespace rg::dist
