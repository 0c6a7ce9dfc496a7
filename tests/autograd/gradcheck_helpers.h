// What the gradcheck tests share: seeded f64 inputs and one check that prints the report of
// an op whose analytic gradient disagrees with finite differences.
#pragma once
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "ringgrad.h"

namespace rg::test {

using Inputs = std::vector<Tensor>;

// A standard-normal f64 tensor of `shape`, the same for the same seed.
inline Tensor r(const Shape& shape, uint64_t seed) {
  Generator g{seed, 0};
  return randn(shape, kFloat64, kCPU, &g);
}

inline void check(const char* name, const std::function<Tensor(const Inputs&)>& fn,
                  const Inputs& in) {
  GradcheckResult res = gradcheck(fn, in);
  INFO(name << ": " << res.report);
  CHECK(res.ok);
}

}  // namespace rg::test
