// 64-bit FNV-1a (Fowler-Noll-Vo): a fast fingerprint of bytes, the one hash of the project
// (file fingerprints in rgtrain's start-up agreement, DDP's parameter-equality check). Not a
// cryptographic hash. Chain pieces by passing the previous result as `h`:
// fnv1a(b, nb, fnv1a(a, na)) == fnv1a of a followed by b.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rg {

inline constexpr uint64_t kFnv1aOffsetBasis = 14695981039346656037ull;
inline constexpr uint64_t kFnv1aPrime = 1099511628211ull;

inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnv1aOffsetBasis) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnv1aPrime;
  return h;
}

}  // namespace rg
