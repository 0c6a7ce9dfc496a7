// The thread-local autocast state; see autocast_mode.h.
#include "autograd/autocast_mode.h"

#include "core/error.h"

namespace rg {

namespace {
thread_local bool t_autocast_enabled = false;
thread_local DType t_autocast_dtype = DType::bf16;
}  // namespace

bool AutocastMode::is_enabled() { return t_autocast_enabled; }
DType AutocastMode::lower_dtype() { return t_autocast_dtype; }
void AutocastMode::set(bool enabled, DType lower_dtype) {
  t_autocast_enabled = enabled;
  t_autocast_dtype = lower_dtype;
}

AutocastGuard::AutocastGuard(DType lower_dtype, bool enabled)
    : was_enabled_(AutocastMode::is_enabled()), was_dtype_(AutocastMode::lower_dtype()) {
  RG_CHECK(lower_dtype == DType::bf16, "autocast: the lower dtype must be bfloat16, got ",
           lower_dtype);
  AutocastMode::set(enabled, lower_dtype);
}

}  // namespace rg
