// The contiguous elementwise path's split into an aligned head and 16-byte vectors
// (plan_vectors and vec_width in kernels/cuda/elementwise.cuh), on made-up addresses.
#include <doctest/doctest.h>

#include "kernels/cuda/elementwise.cuh"

using rg::sim::plan_vectors;
using rg::sim::vec_width;

TEST_CASE("vector width is 16 bytes of the widest operand") {
  CHECK(vec_width<float, float, float>() == 4);
  CHECK(vec_width<uint16_t, uint16_t>() == 8);  // bf16's storage type
  CHECK(vec_width<double, float>() == 2);
  CHECK(vec_width<uint16_t, float>() == 4);  // a conversion: f32 in, bf16 out
  CHECK(vec_width<float>() == 4);            // fill: no input
}

TEST_CASE("the head aligns every operand when they are off by the same element count") {
  const size_t f32[] = {4, 4, 4};
  const uintptr_t aligned[] = {0x1000, 0x2000, 0x3000};
  auto plan = plan_vectors(aligned, f32, 3, 4, 100);
  CHECK(plan.vectors);
  CHECK(plan.head == 0);
  const uintptr_t one_off[] = {0x1004, 0x2004, 0x3004};  // 3 scalar elements, then vectors
  plan = plan_vectors(one_off, f32, 3, 4, 100);
  CHECK(plan.vectors);
  CHECK(plan.head == 3);
  CHECK(plan_vectors(one_off, f32, 3, 4, 2).head == 2);  // shorter than the head
  const uintptr_t differ[] = {0x1004, 0x2008, 0x3004};   // no head aligns both
  CHECK_FALSE(plan_vectors(differ, f32, 3, 4, 100).vectors);
  const uintptr_t odd[] = {0x1001, 0x2001};  // not even element-aligned
  CHECK_FALSE(plan_vectors(odd, f32, 2, 4, 100).vectors);
}

TEST_CASE("the head counts elements of each operand's own size") {
  const size_t bf16[] = {2, 2};
  const uintptr_t three_off[] = {0x1006, 0x2006};  // 8 per vector: 5 scalar elements first
  auto plan = plan_vectors(three_off, bf16, 2, 8, 100);
  CHECK(plan.vectors);
  CHECK(plan.head == 5);
  // f32 -> bf16 with 4 per vector: out (8-byte vectors) is 1 element off, so is the input
  const size_t mixed[] = {2, 4};
  const uintptr_t conv[] = {0x1002, 0x2004};
  plan = plan_vectors(conv, mixed, 2, 4, 100);
  CHECK(plan.vectors);
  CHECK(plan.head == 3);
  const uintptr_t conv_bad[] = {0x1002, 0x2000};
  CHECK_FALSE(plan_vectors(conv_bad, mixed, 2, 4, 100).vectors);
}
