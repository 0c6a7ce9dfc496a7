// The reduction table's rows (RG_REDUCE_OPS, core/op_table.h) as scalar functors, for the
// cpu reduce kernel (g++) and the cuda/sim one (nvcc and g++). scalar::<name>_reduction has
//   static constexpr ReduceOp op; ReduceRule rule; ReduceKind kind;
//   identity<V>()            -> V, the accumulator before the first element
//   combine(a, b)            -> V (fold rows) or bool, "b beats a" (select rows)
//   finish(v, i, n)          -> V, or int64 (the index i) for `index` rows
// Kernels take a row as a template parameter and call the generic helpers below, which add
// what every select row shares (NaN beats any number, ties keep the first index):
//   combine<Row>(a, b)       the accumulator after b (values only; vectorisable)
//   beats<Row>(best, v)      whether v replaces best (arg ops, keeping the earlier on ties)
//   reduce_acc_t<Row, C>     the accumulator type for compute type C
//   with_reduction(op, fn)   calls fn(Row{}): the one runtime switch, once per kernel call
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/elementwise_scalar.h"
#include "core/op_table.h"

namespace rg::scalar {

// The smallest and largest V: -inf and +inf where V has them.
template <typename V>
RG_SCALAR constexpr V lowest() {
  if constexpr (std::numeric_limits<V>::has_infinity)
    return -std::numeric_limits<V>::infinity();
  else
    return std::numeric_limits<V>::lowest();
}
template <typename V>
RG_SCALAR constexpr V highest() {
  if constexpr (std::numeric_limits<V>::has_infinity)
    return std::numeric_limits<V>::infinity();
  else
    return std::numeric_limits<V>::max();
}
// a * b; integers wrap modulo 2^64 as PyTorch's do (a signed overflow would be undefined).
template <typename V>
RG_SCALAR V mul_wrap(V a, V b) {
  if constexpr (std::is_integral_v<V>)
    return V(std::make_unsigned_t<V>(a) * std::make_unsigned_t<V>(b));
  else
    return a * b;
}

// Fails to compile when a row's expression has the wrong type (a select row's combine that
// is not a comparison, a fold's that left V, an index row whose finish is not the index).
template <typename Want, typename Got>
RG_SCALAR Got checked_as(Got v) {
  static_assert(std::is_same_v<Want, Got>,
                "a reduction row's expression has the wrong type (see RG_REDUCE_OPS)");
  return v;
}

#define RG_REDUCE_FUNCTOR(name_, rule_, kind_, identity_expr, combine_expr, finish_expr, ...) \
  struct name_##_reduction {                                                                  \
    static constexpr ReduceOp op = ReduceOp::name_;                                           \
    static constexpr ReduceRule rule = ReduceRule::rule_;                                     \
    static constexpr ReduceKind kind = ReduceKind::kind_;                                     \
    template <typename V>                                                                     \
    RG_SCALAR static V identity() {                                                           \
      return checked_as<V>(identity_expr);                                                    \
    }                                                                                         \
    template <typename V>                                                                     \
    RG_SCALAR static auto combine(V a, V b) {                                                 \
      using Want = std::conditional_t<kind == ReduceKind::fold, V, bool>;                     \
      return checked_as<Want>(combine_expr);                                                  \
    }                                                                                         \
    template <typename V>                                                                     \
    RG_SCALAR static auto finish([[maybe_unused]] V v, [[maybe_unused]] int64_t i,            \
                                 [[maybe_unused]] int64_t n) {                                \
      using Want = std::conditional_t<rule == ReduceRule::index, int64_t, V>;                 \
      return checked_as<Want>(finish_expr);                                                   \
    }                                                                                         \
  };
RG_REDUCE_OPS(RG_REDUCE_FUNCTOR)
#undef RG_REDUCE_FUNCTOR

template <typename Row, typename C>
using reduce_acc_t =
    std::conditional_t<Row::kind == ReduceKind::fold,
                       std::conditional_t<std::is_integral_v<C>, int64_t, double>, C>;

// The accumulator after element b. Select rows: branch-free so that loops vectorise; a NaN
// in a stays (b > NaN and b != b are both false for a number b), a NaN in b wins.
template <typename Row, typename V>
RG_SCALAR V combine(V a, V b) {
  if constexpr (Row::kind == ReduceKind::fold)
    return Row::combine(a, b);
  else
    return (Row::combine(a, b) || is_nan(b)) ? b : a;
}
// Select rows: whether v strictly beats best (so ties keep the earlier index); a NaN beats
// any number, and nothing beats a NaN.
template <typename Row, typename V>
RG_SCALAR bool beats(V best, V v) {
  static_assert(Row::kind == ReduceKind::select, "beats: only select rows have a winner");
  if (is_nan(v)) return !is_nan(best);
  return Row::combine(best, v);
}

template <typename F>
decltype(auto) with_reduction(ReduceOp op, F&& fn) {
  switch (op) {
#define RG_CASE(name, ...) \
  case ReduceOp::name:     \
    return fn(name##_reduction{});
    RG_REDUCE_OPS(RG_CASE)
#undef RG_CASE
  }
  RG_FAIL("reduce: op ", static_cast<int>(op), " is not in the op table");
}

}  // namespace rg::scalar
