// Shapes and strides (in elements, as in PyTorch and candle), broadcasting, dim wrapping.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace rg {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
Strides contiguous_strides(const Shape& shape);
// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// NumPy broadcasting of two shapes; throws naming `op` and both shapes on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
std::string shape_str(const Shape& shape);  // "[2,3]"

struct ShapePrinter {
  const Shape& shape;
};
inline std::ostream& operator<<(std::ostream& os, ShapePrinter p) { return os << shape_str(p.shape); }

}  // namespace rg
