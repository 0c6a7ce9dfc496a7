// Folding received bytes straight into a buffer: dst[i] = dst[i] (op) incoming[i], for the
// ring all-reduce's reduce-scatter steps, which thereby reduce out of a shared-memory ring
// (or a socket's small bounce buffer) without first copying each chunk into scratch memory.
// The bytes may arrive in pieces of any length and at any address (a ring position after a
// 40-byte header, or after an odd number of bf16): elements are loaded with memcpy, and an
// element split between two pieces waits in a carry of at most 7 bytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dist/work.h"

namespace rg::dist {

// Whether ByteCombiner folds this dtype (f32, f64: the dtypes the ring reduces floating
// data in; the others keep the copy into scratch and reduce_into).
bool combines_bytes(DType dtype);

// Folds `count` elements at src into dst with the arithmetic of reduce_into (the op table's
// add and maximum, so the bits are the same).
void combine_bytes(char* dst, const char* src, int64_t count, DType dtype, CombineOp op);

struct ByteCombiner {
  char* dst = nullptr;
  DType dtype = DType::f32;
  CombineOp op = CombineOp::sum;
  size_t folded = 0;  // bytes of dst already combined
  char carry[8] = {};
  size_t carry_len = 0;

  // The next `len` bytes of the incoming buffer.
  void take(const char* src, size_t len);
};

}  // namespace rg::dist
