// Shared rings and the message engine's view of a peer that goes away: ring memory must be
// aligned (the fresh-clone crash of issue 10), ring sizes from the environment are validated,
// and a peer that closes in order after its last send is not a failure (issue 10, item 11).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <vector>

#include "dist/byte_stream.h"
#include "dist/message_transport.h"
#include "dist/shared_rings.h"
#include "tests/dist/dist_test_util.h"
#include "tests/dist/test_ring_memory.h"

using namespace rg;
using namespace rg::dist;
using namespace rg::dist::test;

TEST_CASE("RingBuffer::create refuses memory that is not 64-byte aligned") {
  void* block = ::operator new(4096, std::align_val_t(kRingAlignment));
  char* base = static_cast<char*>(block);
  for (size_t offset : {size_t(1), size_t(8), size_t(16), size_t(32), size_t(63)}) {
    CAPTURE(offset);
    CHECK_THROWS_WITH_AS(RingBuffer::create(base + offset, 64),
                         doctest::Contains("is not 64-byte aligned"), Error);
  }
  RingBuffer* ring = RingBuffer::create(base, 100);
  CHECK(ring->capacity == 100);
  CHECK(reinterpret_cast<uintptr_t>(ring) % kRingAlignment == 0);
  ::operator delete(block, std::align_val_t(kRingAlignment));
}

TEST_CASE("ring footprints keep rings laid end to end aligned, whatever the capacity") {
  for (size_t capacity : {size_t(1), size_t(8), size_t(63), size_t(64), size_t(100)}) {
    CAPTURE(capacity);
    CHECK(RingBuffer::footprint(capacity) % kRingAlignment == 0);
    CHECK(RingBuffer::footprint(capacity) >= sizeof(RingBuffer) + capacity);
  }
}

TEST_CASE("RG_DIST_SHM_BYTES is validated, named in errors, and rounded up to 64") {
  CHECK(shm_ring_bytes(nullptr) == 4u << 20);
  CHECK(shm_ring_bytes("") == 4u << 20);
  CHECK(shm_ring_bytes("1") == 64);
  CHECK(shm_ring_bytes("8") == 64);
  CHECK(shm_ring_bytes("63") == 64);
  CHECK(shm_ring_bytes("64") == 64);
  CHECK(shm_ring_bytes("100") == 128);
  for (const char* bad :
       {"abc", "0", "-5", "12abc", " 64", "99999999999999999999999", "2000000000"}) {
    CAPTURE(bad);
    const std::string named = str("RG_DIST_SHM_BYTES='", bad, "'");
    CHECK_THROWS_WITH_AS(shm_ring_bytes(bad), doctest::Contains(named.c_str()), Error);
  }
}

namespace {

// Models the moment that raced: the peer's last message lands in the data stream, and the peer
// closes, between this rank's read of the data stream and its read of the control stream.
// The data stream shows nothing until the control stream has reported the peer gone.
struct Gate {
  std::atomic<bool> peer_gone{false};
};

class DataShownAfterClose : public ByteStream {
 public:
  DataShownAfterClose(std::unique_ptr<ByteStream> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  size_t write_some(const void* data, size_t n) override { return inner_->write_some(data, n); }
  size_t read_some(void* data, size_t n) override {
    return gate_->peer_gone ? inner_->read_some(data, n) : 0;
  }
  void close() override { inner_->close(); }

 private:
  std::unique_ptr<ByteStream> inner_;
  std::shared_ptr<Gate> gate_;
};

class GoneControl : public ByteStream {
 public:
  explicit GoneControl(std::shared_ptr<Gate> gate) : gate_(std::move(gate)) {}
  size_t write_some(const void*, size_t) override { throw PeerClosed{}; }
  size_t read_some(void*, size_t) override {
    gate_->peer_gone = true;
    throw PeerClosed{};
  }
  void close() override {}

 private:
  std::shared_ptr<Gate> gate_;
};

}  // namespace

TEST_CASE("a peer that closes right after its last send is not a failure") {
  // ring 0: data 0 -> 1, ring 1: data 1 -> 0, ring 2: control 0 -> 1, ring 3: control 1 -> 0.
  const TestRings rings(4, 1 << 16);
  std::vector<PeerLink> links0(2), links1(2);
  links0[1].data = rings.stream(0, 1);
  links0[1].control = rings.stream(2, 3);
  auto gate = std::make_shared<Gate>();
  links1[0].data = std::make_unique<DataShownAfterClose>(rings.stream(1, 0), gate);
  links1[0].control = std::make_unique<GoneControl>(gate);
  Options options;
  options.timeout = Milliseconds(60'000);  // a failure must come from the close, not a timeout
  auto sender = make_message_group("test", 0, 2, options, std::move(links0), nullptr);
  auto receiver = make_message_group("test", 1, 2, options, std::move(links1), nullptr);

  Tensor sent = make_input(DType::f64, 4, 0);
  sender->send(sent, 1)->wait();  // complete once in the ring
  Tensor got = empty({4}, DType::f64);
  CHECK_NOTHROW(receiver->recv(got, 0)->wait());
  CHECK(bytes_of(got) == bytes_of(sent));
  CHECK(gate->peer_gone);  // the race was really played
}

namespace {

// A socket's data stream on a slow link: the peer's last message is still on the wire when
// the end of its (short) control stream arrives, and shows up only some reads later. fd() is
// a pipe that never becomes readable, so the receiver treats the link as a socket and polls.
class DataLateOverSocket : public ByteStream {
 public:
  DataLateOverSocket(std::unique_ptr<ByteStream> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {
    REQUIRE(::pipe(pipe_) == 0);
  }
  ~DataLateOverSocket() override { ::close(pipe_[0]), ::close(pipe_[1]); }
  size_t write_some(const void* data, size_t n) override { return inner_->write_some(data, n); }
  size_t read_some(void* data, size_t n) override {
    if (!gate_->peer_gone || ++reads_after_close_ < 50) return 0;
    return inner_->read_some(data, n);
  }
  int fd() const override { return pipe_[0]; }
  void close() override { inner_->close(); }
  int reads_after_close_ = 0;

 private:
  std::unique_ptr<ByteStream> inner_;
  std::shared_ptr<Gate> gate_;
  int pipe_[2];
};

}  // namespace

TEST_CASE("over a socket, a peer's last data may arrive well after its control stream ends") {
  const TestRings rings(2, 1 << 16);  // data 0 -> 1, data 1 -> 0
  std::vector<PeerLink> links0(2), links1(2);
  links0[1].data = rings.stream(0, 1);
  auto gate = std::make_shared<Gate>();
  auto late = std::make_unique<DataLateOverSocket>(rings.stream(1, 0), gate);
  DataLateOverSocket* late_data = late.get();
  links1[0].data = std::move(late);
  links1[0].control = std::make_unique<GoneControl>(gate);
  Options options;
  options.timeout = Milliseconds(60'000);  // a failure must come from the close, not a timeout
  auto sender = make_message_group("test", 0, 2, options, std::move(links0), nullptr);
  auto receiver = make_message_group("test", 1, 2, options, std::move(links1), nullptr);

  Tensor sent = make_input(DType::f64, 4, 0);
  sender->send(sent, 1)->wait();
  sender.reset();  // the sender is gone: its data stream ends after the message
  Tensor got = empty({4}, DType::f64);
  CHECK_NOTHROW(receiver->recv(got, 0)->wait());
  CHECK(bytes_of(got) == bytes_of(sent));
  CHECK(late_data->reads_after_close_ >= 50);  // the data really came after the control's end
  // Later, with the data stream ended too, the peer is gone: a receive fails naming it.
  Tensor more = empty({4}, DType::f64);
  CHECK_THROWS_WITH_AS(receiver->recv(more, 0)->wait(), doctest::Contains("rank 0 has gone"),
                       Error);
}

// A small frame written whole is also copied to the ring's preview (on the write position's
// cache line); peek must give the bytes of the stream whichever copy it reads: after a wrap,
// after writes that leave no preview, and for frames longer than the preview.
TEST_CASE("peek and skip give the stream's bytes, from the preview or the ring") {
  constexpr size_t kCapacity = 100;  // frames wrap often
  const TestRings rings(2, kCapacity);
  auto a = rings.stream(0, 1);
  auto b = rings.stream(1, 0);
  uint8_t next = 0;
  auto bytes = [&](size_t n) {
    std::vector<char> v(n);
    for (auto& c : v) c = static_cast<char>(next++);
    return v;
  };
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    const size_t head = 1 + round % 40, tail = round % 3 == 0 ? 0 : 1 + round % 17;
    std::vector<char> h = bytes(head), t = bytes(tail);
    std::vector<char> want = h;
    want.insert(want.end(), t.begin(), t.end());
    if (round % 5 == 4) {  // a plain write leaves the preview of an earlier frame behind
      REQUIRE(a->write_some(want.data(), want.size()) == want.size());
    } else {
      REQUIRE(a->write_whole(h.data(), h.size(), t.data(), t.size()));
    }
    REQUIRE(b->readable() == want.size());
    std::vector<char> got(want.size());
    b->peek(got.data(), got.size());
    CHECK(got == want);
    std::vector<char> first(std::min<size_t>(3, want.size()));
    b->peek(first.data(), first.size());  // a shorter look at the same frame
    CHECK(std::equal(first.begin(), first.end(), want.begin()));
    b->skip(want.size());
    CHECK(b->readable() == 0);
  }
  // A look past the end of the previewed frame, into one written after it without a preview.
  std::vector<char> one = bytes(20), two = bytes(12);
  REQUIRE(a->write_whole(one.data(), one.size(), nullptr, 0));
  REQUIRE(a->write_some(two.data(), two.size()) == two.size());
  std::vector<char> both(one.size() + two.size());
  b->peek(both.data(), both.size());
  std::vector<char> want = one;
  want.insert(want.end(), two.begin(), two.end());
  CHECK(both == want);
  b->skip(both.size());
  // A frame that does not fit is not written at all.
  std::vector<char> big = bytes(kCapacity + 1);
  CHECK_FALSE(a->write_whole(big.data(), 8, big.data() + 8, kCapacity - 7));
  CHECK(b->readable() == 0);
}
