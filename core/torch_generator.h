// PyTorch's CPU random streams: a generator whose numbers equal torch's CPU generator's for the
// same seed and the same sequence of calls, so a program seeded with manual_seed(s) draws the
// data and initial weights PyTorch would. The engine is MT19937 (core/mt19937.h, Matsumoto &
// Nishimura), seeded with the seed's low 32 bits. The distributions follow PyTorch's algorithms
// (aten/src/ATen/core/DistributionsHelper.h and native/cpu/DistributionTemplates.h), written
// anew here:
//   random()    one engine output;  random64()  (first output << 32) | second output.
//   uniform     float: the low 24 bits of random() / 2^24; double: the low 53 bits of
//               random64() / 2^53; then fma(x, to - from, from) in the dtype.
//   normal      n >= 16 and contiguous: n uniforms first, Box-Muller in blocks of 16 (element j
//               pairs with j + 8), a ragged tail's last 16 redrawn and transformed again;
//               otherwise per element from a double Box-Muller whose second value the
//               generator keeps for its next normal draw (manual_seed clears it).
//   exponential -log1p(-u) / lambda from a double uniform, cast to the dtype.
//   bernoulli   a double uniform < p (a scalar p); a uniform of p's dtype < p (a tensor p).
//   randperm    Fisher-Yates, z = random() % (n - i) (random64() % (i + 1), inside-out, for n
//               from 2^32 / 20 on).
// float32 normals may differ from PyTorch's AVX2 build in the last bits (it vectorises log and
// cos); every other stream is bit-exact. Outputs are raw buffers: python/src/bind_random.cpp
// makes the tensors.
#pragma once
#include <cstdint>

#include "core/mt19937.h"

namespace rg {

class TorchGenerator {
 public:
  static constexpr uint64_t kFreshSeed = 67280421310721ull;  // a new torch.Generator()'s seed

  explicit TorchGenerator(uint64_t seed = kFreshSeed) { manual_seed(seed); }

  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  uint32_t random() { return engine_(); }
  uint64_t random64();

  template <typename T>
  void uniform(T* out, int64_t n, double from, double to);
  template <typename T>
  void normal(T* out, int64_t n, double mean, double std, bool contiguous);
  template <typename T>
  void exponential(T* out, int64_t n, double lambda);
  template <typename T>
  void bernoulli(T* out, int64_t n, double p);
  template <typename T>
  void bernoulli(T* out, const T* p, int64_t n);
  // out[i] = (wide ? random64() : random()) % modulus + base: randint, random_(from, to),
  // random_() (the caller picks wide and modulus from the dtype, as PyTorch does).
  void integers(int64_t* out, int64_t n, uint64_t modulus, int64_t base, bool wide);
  void randperm(int64_t* out, int64_t n);
  // probs: rows x categories, row-major, each row non-negative with a positive sum.
  template <typename T>
  void multinomial(const T* probs, int64_t rows, int64_t categories, int64_t samples,
                   bool replacement, int64_t* out);

 private:
  double uniform_double();
  float uniform_float();
  double normal_double();  // standard normal, the cached Box-Muller pair's
  template <typename T>
  void multinomial_with_replacement(const T* probs, int64_t rows, int64_t categories,
                                    int64_t samples, int64_t* out);

  Mt19937 engine_;
  uint64_t seed_ = 0;
  bool has_next_normal_ = false;
  double next_normal_ = 0;
};

}  // namespace rg
