// The lines along one dim of tensors of one rank, for the CPU kernels that walk a dim in
// order (gather, index_put, cumsum, sort): line l is number l in row-major order over the
// shape with that dim's size set to 1, and start(l)[k] is the offset (in elements) of its
// first element in operand k, whose strides were given in that order.
#pragma once
#include <array>
#include <cstdint>

#include "core/shape.h"
#include "kernels/cpu/capability.h"

namespace rg::cpu::RG_CPU_CAP {

template <size_t N>
class Lines {
 public:
  Lines(const Shape& shape, int64_t dim, const std::array<Strides, N>& strides)
      : shape_(shape), dim_(dim), strides_(strides) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (d != dim) count_ *= shape[d];
  }
  int64_t count() const { return count_; }
  std::array<int64_t, N> start(int64_t line) const {
    std::array<int64_t, N> offset{};
    for (int64_t d = static_cast<int64_t>(shape_.size()) - 1; d >= 0; --d) {
      if (d == dim_) continue;
      const int64_t i = line % shape_[d];
      line /= shape_[d];
      for (size_t k = 0; k < N; ++k) offset[k] += i * strides_[k][d];
    }
    return offset;
  }

 private:
  Shape shape_;
  int64_t dim_;
  std::array<Strides, N> strides_;
  int64_t count_ = 1;
};

}  // namespace rg::cpu::RG_CPU_CAP
