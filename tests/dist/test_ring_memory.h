// Shared-memory rings for the tests of the byte streams: `count` rings of `capacity` bytes laid
// end to end in one aligned heap block, which `memory` keeps alive (pass it to
// make_ring_stream).
#pragma once
#include <memory>
#include <new>
#include <vector>

#include "dist/byte_stream.h"

namespace rg::dist::test {

struct TestRings {
  std::shared_ptr<char> memory;
  std::vector<RingBuffer*> ring;
  TestRings(int count, size_t capacity) {
    const size_t bytes = RingBuffer::footprint(capacity);
    memory.reset(
        static_cast<char*>(::operator new[](count* bytes, std::align_val_t(kRingAlignment))),
        [](char* p) { ::operator delete[](p, std::align_val_t(kRingAlignment)); });
    for (int i = 0; i < count; ++i)
      ring.push_back(RingBuffer::create(memory.get() + i * bytes, capacity));
  }
  // A stream that writes ring `out` and reads ring `in`.
  std::unique_ptr<ByteStream> stream(int out, int in) const {
    return make_ring_stream(ring[out], ring[in], nullptr, memory);
  }
};

}  // namespace rg::dist::test
