// gradcheck for the composite ops (ops/ops.h, "composite ops"): autograd through their
// composition against finite differences, on transposed views and with every option.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ringgrad.h"
#include "tests/autograd/gradcheck_helpers.h"

using namespace rg;
using rg::test::check;
using rg::test::Inputs;
using rg::test::r;

TEST_CASE("gradcheck: var, std and norm") {
  Tensor a = r({4, 3, 5}, 1);
  check("var all", [](const Inputs& x) { return var(x[0]); }, {a});
  check("var dims keepdim", [](const Inputs& x) { return var(x[0], {0, -1}, 1, true); }, {a});
  check("var correction 0, transposed", [](const Inputs& x) { return var(x[0].t(), {1}, 0); },
        {r({5, 3}, 2)});
  check("std", [](const Inputs& x) { return std_dev(x[0], {1}); }, {a});
  check("std_mean",
        [](const Inputs& x) {
          auto [s, m] = std_mean(x[0], {2});
          return add(s, mul(m, 3.0));
        },
        {a});
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : {1.0, 2.0, 3.0, inf, -inf})
    check("norm", [p](const Inputs& x) { return norm(x[0], p, {1}); }, {a});
  check("norm all, keepdim", [](const Inputs& x) { return norm(x[0], 2, {}, true); }, {a});
}

TEST_CASE("gradcheck: tril, triu, repeat, outer, pad") {
  Tensor a = r({2, 4, 3}, 3);
  check("tril", [](const Inputs& x) { return tril(x[0], -1); }, {a});
  check("triu transposed", [](const Inputs& x) { return triu(x[0].transpose(1, 2), 1); }, {a});
  check("repeat", [](const Inputs& x) { return repeat(x[0], {2, 1, 3, 2}); }, {a});
  check("repeat_interleave", [](const Inputs& x) { return repeat_interleave(x[0], 2, -2); }, {a});
  check("outer", [](const Inputs& x) { return outer(x[0], x[1]); }, {r({3}, 4), r({5}, 5)});
  for (const char* mode : {"constant", "reflect", "replicate", "circular"})
    check(mode, [mode](const Inputs& x) { return pad(x[0], {2, 1, 1, 2}, mode); }, {a});
  check("pad crop", [](const Inputs& x) { return pad(x[0], {-1, 2}); }, {a});
}

TEST_CASE("gradcheck: einsum") {
  check("ij,jk->ik", [](const Inputs& x) { return einsum("ij,jk->ik", x); },
        {r({3, 4}, 6), r({4, 2}, 7)});
  check("bhqd,bhkd->bhqk", [](const Inputs& x) { return einsum("bhqd,bhkd->bhqk", x); },
        {r({2, 2, 3, 4}, 8), r({2, 2, 5, 4}, 9)});
  check("...ij,jk", [](const Inputs& x) { return einsum("...ij,jk", x); },
        {r({2, 3, 4}, 10), r({4, 2}, 11)});
  check("ij,jk,kl->il (a transposed operand)",
        [](const Inputs& x) {
          return einsum("ij,jk,kl->il", {x[0].t(), x[1], x[2]});
        },
        {r({4, 3}, 12), r({4, 2}, 13), r({2, 3}, 14)});
  check("ijk->ki sum", [](const Inputs& x) { return einsum("ijk->ki", x); }, {r({2, 3, 4}, 15)});
  check("bij,bjk->bik broadcast batch", [](const Inputs& x) { return einsum("bij,bjk->bik", x); },
        {r({1, 3, 4}, 16), r({2, 4, 2}, 17)});
}

TEST_CASE("gradcheck: conv2d, conv1d, pooling") {
  auto conv = [](Pair s, Pair p, Pair d, int64_t g) {
    return [=](const Inputs& x) { return conv2d(x[0], x[1], x[2], s, p, d, g); };
  };
  check("conv2d", conv({1, 1}, {0, 0}, {1, 1}, 1),
        {r({2, 3, 5, 4}, 20), r({2, 3, 3, 2}, 21), r({2}, 22)});
  check("conv2d stride, padding, dilation, groups", conv({2, 1}, {1, 2}, {2, 1}, 2),
        {r({1, 4, 6, 5}, 23), r({4, 2, 2, 3}, 24), r({4}, 25)});
  check("conv2d unbatched", conv({1, 2}, {1, 1}, {1, 1}, 1),
        {r({2, 4, 4}, 26), r({3, 2, 3, 3}, 27), r({3}, 28)});
  check("conv1d",
        [](const Inputs& x) { return conv1d(x[0].transpose(1, 2), x[1], Tensor(), 2, 1, 1, 1); },
        {r({2, 7, 3}, 29), r({4, 3, 3}, 30)});
  // max: distinct values (no ties), so the max is differentiable at the point
  check("max_pool2d",
        [](const Inputs& x) {
          return max_pool2d(x[0], {2, 3}, {1, 2}, {1, 1});
        },
        {r({2, 2, 5, 6}, 31)});
  check("avg_pool2d",
        [](const Inputs& x) {
          return avg_pool2d(x[0], {3, 3}, {2, 2}, {1, 1}, true, false);
        },
        {r({1, 2, 6, 5}, 32)});
}

TEST_CASE("gradcheck: adaptive_avg_pool2d with overlapping windows") {
  check("adaptive_avg_pool2d",
        [](const Inputs& x) {
          return adaptive_avg_pool2d(x[0], {3, 2});
        },
        {r({2, 2, 5, 5}, 35)});
}

TEST_CASE("gradcheck: batch_norm, training and evaluation") {
  check("batch_norm training",
        [](const Inputs& x) { return batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true); },
        {r({4, 3, 2, 2}, 40), r({3}, 41), r({3}, 42)});
  check("batch_norm training 2-D, no affine",
        [](const Inputs& x) {
          return batch_norm(x[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
        },
        {r({5, 3}, 43)});
  Tensor running_mean = r({3}, 44), running_var = add(square(r({3}, 45)), 0.5);
  check("batch_norm evaluation",
        [=](const Inputs& x) {
          return batch_norm(x[0], running_mean, running_var, x[1], x[2], false);
        },
        {r({4, 3, 2}, 46), r({3}, 47), r({3}, 48)});
}
