// The data forms of the op table's lists (core/op_table.h): names, rules, and the row
// expressions as text.
#include "core/op_table.h"

#include <array>
#include <string_view>

namespace rg {
namespace {

constexpr bool is_g(std::string_view expression) { return expression == "g"; }

#define RG_UNARY_INFO(name, rule, forward, gradient) \
  {#name, DTypeRule::rule, #forward, {#gradient, ""}, {is_g(#gradient), false}},
constexpr ElementwiseInfo kUnary[] = {RG_UNARY_OPS(RG_UNARY_INFO)};
#undef RG_UNARY_INFO

#define RG_BINARY_INFO(name, rule, forward, gradient_a, gradient_b) \
  {#name,                                                           \
   DTypeRule::rule,                                                 \
   #forward,                                                        \
   {#gradient_a, #gradient_b},                                      \
   {is_g(#gradient_a), is_g(#gradient_b)}},
constexpr ElementwiseInfo kBinary[] = {RG_BINARY_OPS(RG_BINARY_INFO)};
#undef RG_BINARY_INFO

}  // namespace

const ElementwiseInfo& info(UnaryOp op) { return kUnary[static_cast<int>(op)]; }
const ElementwiseInfo& info(BinaryOp op) { return kBinary[static_cast<int>(op)]; }
const char* op_name(UnaryOp op) { return info(op).name; }
const char* op_name(BinaryOp op) { return info(op).name; }

#define RG_REDUCE_INFO(name, rule, kind, identity, combine, finish, gradient) \
  {#name, ReduceRule::rule, ReduceKind::kind, #identity, #combine, #finish, #gradient},
constexpr ReduceInfo kReduce[] = {RG_REDUCE_OPS(RG_REDUCE_INFO)};
#undef RG_REDUCE_INFO

const ReduceInfo& info(ReduceOp op) {
  RG_CHECK(static_cast<int>(op) < kNumReduceOps, "reduce: op ", static_cast<int>(op),
           " is not in the op table");
  return kReduce[static_cast<int>(op)];
}
const char* op_name(ReduceOp op) { return info(op).name; }

const char* rule_name(ReduceRule r) {
  switch (r) {
    case ReduceRule::widen:
      return "widen";
    case ReduceRule::floating:
      return "floating";
    case ReduceRule::same:
      return "same";
    case ReduceRule::index:
      return "index";
  }
  return "?";
}
const char* kind_name(ReduceKind k) { return k == ReduceKind::fold ? "fold" : "select"; }

const char* rule_name(DTypeRule r) {
  switch (r) {
    case DTypeRule::same:
      return "same";
    case DTypeRule::floating:
      return "floating";
    case DTypeRule::boolean:
      return "boolean";
  }
  return "?";
}

KernelTable& unchecked_kernel_table(DeviceType type) {
  static std::array<KernelTable, kNumDeviceTypes> tables;
  return tables[static_cast<int>(type)];
}

}  // namespace rg
