// Philox4x32-10 (core/philox.h) against Random123's published known-answer vectors (its
// tests/kat_vectors: counter words, key words, output words), and the (seed, counter) form
// every random kernel uses against the same block.
#include <doctest/doctest.h>

#include <cstdint>

#include "core/philox.h"

namespace {

struct KnownAnswer {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t out[4];
};

constexpr KnownAnswer kRandom123[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

}  // namespace

TEST_CASE("Philox4x32-10 gives Random123's known answers") {
  for (const KnownAnswer& kat : kRandom123) {
    rg::PhiloxOutput got = rg::philox4x32_10_block(kat.ctr, kat.key[0], kat.key[1]);
    for (int i = 0; i < 4; ++i) {
      CAPTURE(i);
      CHECK(got.v[i] == kat.out[i]);
    }
  }
}

TEST_CASE("philox4x32_10(seed, counter) is the block of counter {lo, hi, 0, 0} and key seed") {
  // The all-zero vector through the (seed, counter) form.
  rg::PhiloxOutput zero = rg::philox4x32_10(0, 0);
  for (int i = 0; i < 4; ++i) CHECK(zero.v[i] == kRandom123[0].out[i]);
  const uint64_t seed = 0x299f31d0a4093822ull, counter = 0x85a308d3243f6a88ull;
  const uint32_t ctr[4] = {0x243f6a88, 0x85a308d3, 0, 0};
  rg::PhiloxOutput a = rg::philox4x32_10(seed, counter);
  rg::PhiloxOutput b = rg::philox4x32_10_block(ctr, 0xa4093822, 0x299f31d0);
  for (int i = 0; i < 4; ++i) CHECK(a.v[i] == b.v[i]);
}
