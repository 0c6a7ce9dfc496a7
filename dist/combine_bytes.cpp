// See combine_bytes.h.
#include "dist/combine_bytes.h"

#include <algorithm>
#include <cstring>

#include "core/elementwise_scalar.h"

namespace rg::dist {
namespace {

template <typename T, typename Fn>
void combine_typed(char* dst, const char* src, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, dst + i * sizeof(T), sizeof(T));
    std::memcpy(&b, src + i * sizeof(T), sizeof(T));
    const T r = static_cast<T>(Fn::forward(a, b));
    std::memcpy(dst + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename T>
void combine_as(char* dst, const char* src, int64_t count, CombineOp op) {
  if (op == CombineOp::max)
    combine_typed<T, scalar::maximum_fn>(dst, src, count);
  else  // sum, and avg (divided at the end)
    combine_typed<T, scalar::add_fn>(dst, src, count);
}

}  // namespace

bool combines_bytes(DType dtype) { return dtype == DType::f32 || dtype == DType::f64; }

void combine_bytes(char* dst, const char* src, int64_t count, DType dtype, CombineOp op) {
  if (dtype == DType::f32)
    combine_as<float>(dst, src, count, op);
  else if (dtype == DType::f64)
    combine_as<double>(dst, src, count, op);
  else
    RG_FAIL("combine_bytes: unsupported dtype ", dtype);
}

void ByteCombiner::take(const char* src, size_t len) {
  const size_t item = itemsize(dtype);
  while (len > 0) {
    if (carry_len > 0 || len < item) {  // an element split between pieces
      const size_t k = std::min(item - carry_len, len);
      std::memcpy(carry + carry_len, src, k);
      carry_len += k, src += k, len -= k;
      if (carry_len == item) {
        combine_bytes(dst + folded, carry, 1, dtype, op);
        folded += item, carry_len = 0;
      }
      continue;
    }
    const size_t whole = len / item;
    combine_bytes(dst + folded, src, static_cast<int64_t>(whole), dtype, op);
    folded += whole * item, src += whole * item, len -= whole * item;
  }
}

}  // namespace rg::dist
