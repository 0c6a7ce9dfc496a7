// Checked sizes: the element and byte counts of a shape a tensor is about to be made or viewed
// with, computed with overflow checks. Every factory, view and broadcast passes here (core/
// tensor.cpp, core/shape.cpp, ops/), so a shape too large to count is one rg::Error naming the
// op and the sizes, never a wrapped count that a kernel then writes past.
// (Its own header, not shape.h's: everything includes shape.h.)
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/shape.h"

namespace rg {

// The element count of `shape`: one rg::Error naming `op` and the shape when a size is
// negative or the sizes multiply past 2^63-1. Zero sizes are left out of that product, so no
// contiguous stride of the shape can overflow either. one_inferred: a single -1 (view's and
// reshape's "infer this size") is allowed and counts as 1.
int64_t checked_numel(const Shape& shape, const char* op, bool one_inferred = false);

// checked_numel's count times `itemsize`, checked to fit in 2^63-1 bytes.
size_t checked_nbytes(const Shape& shape, size_t itemsize, const char* op);

}  // namespace rg
