#include "core/shape.h"

#include "core/error.h"
#include "core/shape_checks.h"

namespace rg {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

int64_t checked_numel(const Shape& shape, const char* op, bool one_inferred) {
  int64_t numel = 1, nonzero = 1;
  bool inferred = false;
  for (int64_t s : shape) {
    if (s == -1 && one_inferred && !inferred) {
      inferred = true;
      continue;
    }
    RG_CHECK(s >= 0, op, ": invalid size ", s, " in shape ", shape_str(shape),
             s == -1 && one_inferred ? " (only one size can be -1)" : "");
    RG_CHECK(s == 0 || !__builtin_mul_overflow(nonzero, s, &nonzero), op, ": shape ",
             shape_str(shape), " has too many elements (its sizes multiply past 2^63-1)");
    numel = s == 0 ? 0 : numel;
  }
  return numel == 0 ? 0 : nonzero;
}

size_t checked_nbytes(const Shape& shape, size_t itemsize, const char* op) {
  const int64_t numel = checked_numel(shape, op);
  int64_t nbytes = 0;
  RG_CHECK(!__builtin_mul_overflow(numel, static_cast<int64_t>(itemsize), &nbytes), op, ": shape ",
           shape_str(shape), " of ", itemsize,
           "-byte elements is more than 2^63-1 "
           "bytes");
  return static_cast<size_t>(nbytes);
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  RG_CHECK(dim >= lo && dim <= hi, op, ": dim ", dim, " out of range for a tensor of ", ndim,
           " dims (expected in [", lo, ", ", hi, "])");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    RG_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
             " cannot be broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  checked_numel(out, op);
  return out;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace rg
