// Thread-local autocast state (torch.autocast): while an AutocastGuard is alive, the ops of
// ops/autocast.h's policy table run in a lower precision (bf16) or in f32 as the table says.
// Backward runs with autocast off: derivatives compute in the dtypes the forward saved.
// Thread-local because ranks may run as threads of one process.
#pragma once
#include "core/dtype.h"

namespace rg {

struct AutocastMode {
  static bool is_enabled();
  static DType lower_dtype();  // the dtype "lower" ops compute in (bf16)
  static void set(bool enabled, DType lower_dtype);
};

// RAII: autocast on (or off, enabled=false) in this thread for its lifetime. The lower dtype
// must be bf16, the only 16-bit floating type ringgrad has; any other is an rg::Error.
class AutocastGuard {
 public:
  explicit AutocastGuard(DType lower_dtype = DType::bf16, bool enabled = true);
  ~AutocastGuard() { AutocastMode::set(was_enabled_, was_dtype_); }
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool was_enabled_;
  DType was_dtype_;
};

// RAII: autocast off for its lifetime (backward, and code that must run in full precision).
class AutocastOffGuard : public AutocastGuard {
 public:
  AutocastOffGuard() : AutocastGuard(DType::bf16, false) {}
};

}  // namespace rg
