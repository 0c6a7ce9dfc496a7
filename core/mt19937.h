// MT19937, the 32-bit Mersenne Twister (Matsumoto & Nishimura, "Mersenne Twister: a
// 623-dimensionally equidistributed uniform pseudo-random number generator", ACM TOMACS 1998),
// seeded as their init_genrand(s): word 0 is s, word j is 1812433253 * (w ^ (w >> 30)) + j of
// the word before. The stream equals std::mt19937's and PyTorch's CPU generator's engine
// (which seeds it with the low 32 bits of manual_seed's value). core/torch_generator.h draws
// PyTorch's distributions from it.
#pragma once
#include <cstdint>

namespace rg {

class Mt19937 {
 public:
  static constexpr int kWords = 624;

  explicit Mt19937(uint32_t seed = 5489) { seed_with(seed); }

  void seed_with(uint32_t seed) {
    state_[0] = seed;
    for (int j = 1; j < kWords; ++j)
      state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + static_cast<uint32_t>(j);
    next_ = kWords;
  }

  // The next 32-bit output (tempered).
  uint32_t operator()() {
    if (next_ >= kWords) twist();
    uint32_t y = state_[next_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

 private:
  // Regenerates all 624 words at once (x[k + n] = x[k + m] ^ twist(x[k], x[k + 1])), in three
  // runs so that no index wraps inside a loop.
  void twist() {
    constexpr int kShift = 397;
    auto mixed = [this](int k, int next, int far) {
      uint32_t y = (state_[k] & 0x80000000u) | (state_[next] & 0x7fffffffu);
      state_[k] = state_[far] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    };
    int k = 0;
    for (; k < kWords - kShift; ++k) mixed(k, k + 1, k + kShift);
    for (; k < kWords - 1; ++k) mixed(k, k + 1, k + kShift - kWords);
    mixed(kWords - 1, 0, kShift - 1);
    next_ = 0;
  }

  uint32_t state_[kWords];
  int next_ = kWords;
};

}  // namespace rg
