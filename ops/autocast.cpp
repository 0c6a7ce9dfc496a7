// The autocast policy table's lookups and casts; see autocast.h.
#include "ops/autocast.h"

#include "autograd/autocast_mode.h"
#include "ops/ops.h"

namespace rg {

AutocastPolicy autocast_policy(AutocastOp op) {
  switch (op) {
#define RG_AUTOCAST_CASE(name, policy) \
  case AutocastOp::name:               \
    return AutocastPolicy::policy;
    RG_AUTOCAST_OPS(RG_AUTOCAST_CASE)
#undef RG_AUTOCAST_CASE
  }
  return AutocastPolicy::float32;
}

const char* autocast_op_name(AutocastOp op) {
  switch (op) {
#define RG_AUTOCAST_NAME(name, policy) \
  case AutocastOp::name:               \
    return #name;
    RG_AUTOCAST_OPS(RG_AUTOCAST_NAME)
#undef RG_AUTOCAST_NAME
  }
  return "?";
}

Tensor autocast(AutocastOp op, const Tensor& x) {
  if (!AutocastMode::is_enabled() || !x.defined()) return x;
  const DType lower = AutocastMode::lower_dtype();
  switch (autocast_policy(op)) {
    case AutocastPolicy::lower:
      return x.dtype() == DType::f32 ? to(x, x.device(), lower) : x;
    case AutocastPolicy::float32:
      return x.dtype() == lower ? to(x, x.device(), DType::f32) : x;
    case AutocastPolicy::compute_float32:
      return x;
  }
  return x;
}

}  // namespace rg
